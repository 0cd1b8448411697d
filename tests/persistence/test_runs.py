"""RunStore against a real nx-27017."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from app.persistence.runs import COLLECTION_NAME, RunRecord, RunStore
from tests.support import FakeClock

Db = AsyncDatabase[dict[str, Any]]


def record(
    thread_id: str = "thread-1", *, status: Any = "running", created_at: float = 100.0, **extra: Any,
) -> RunRecord:
    return RunRecord(
        thread_id=thread_id, task_id="task-1", client_id="client-1", status=status,
        created_at=created_at, updated_at=created_at, **extra,
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def runs(mongo_db: Db, clock: FakeClock) -> RunStore:
    store = RunStore(mongo_db[COLLECTION_NAME], clock=clock)
    await store.setup()
    return store


async def test_create_then_get_round_trips_the_record(runs: RunStore, mongo_db: Db) -> None:
    original = record(pod_id="pod-a", artifacts=["diff.patch"], branch="task/1")
    await runs.create(original)
    assert await runs.get("thread-1") == original
    assert await runs.get("missing") is None
    assert (await mongo_db[COLLECTION_NAME].find_one({"_id": "thread-1"})) is not None


async def test_only_recovery_reads_the_stored_request(runs: RunStore) -> None:
    """`pending` (the request, up to a megabyte) is read by recovery's list only, not by /status or a list."""
    await runs.create(record(pending={"query": "x" * 10_000}, pod_id="pod-a"))
    [running] = await runs.list_by_status("running")
    assert running.pending == {"query": "x" * 10_000}
    got = await runs.get("thread-1")
    assert got is not None and got.pending is None and got.pod_id == "pod-a"
    [listed] = await runs.recent(10)
    assert listed.pending is None


async def test_create_again_keeps_the_first_created_at(runs: RunStore) -> None:
    await runs.create(record(created_at=100.0))
    await runs.create(record(status="done", created_at=500.0, summary="again"))
    stored = await runs.get("thread-1")
    assert stored is not None
    assert (stored.status, stored.summary, stored.created_at) == ("done", "again", 100.0)


async def test_update_sets_fields_and_bumps_updated_at(runs: RunStore, clock: FakeClock) -> None:
    await runs.create(record())
    clock.now = 2000.0
    assert await runs.update(
        "thread-1", status="interrupted", interrupt_action="commit", interrupt_description="Commit 3 files?"
    ) is True
    stored = await runs.get("thread-1")
    assert stored is not None
    assert (stored.status, stored.interrupt_action, stored.updated_at, stored.created_at) == (
        "interrupted", "commit", 2000.0, 100.0,
    )
    assert await runs.update("missing", status="done") is False


@pytest.mark.parametrize(
    "fields",
    [{"no_such_field": 1}, {"created_at": 5.0}, {"updated_at": 5.0}, {"status": "exploded"}, {"artifacts": 7}],
)
async def test_update_rejects_unknown_immutable_or_invalid_fields(runs: RunStore, fields: dict[str, Any]) -> None:
    await runs.create(record())
    with pytest.raises(ValueError, match=r"cannot update run fields|validation error"):
        await runs.update("thread-1", **fields)
    assert await runs.get("thread-1") == record()


async def test_list_by_status_returns_matching_runs_oldest_first(runs: RunStore) -> None:
    await runs.create(record("t-late", created_at=300.0))
    await runs.create(record("t-done", status="done", created_at=50.0))
    await runs.create(record("t-early", created_at=200.0))
    assert [r.thread_id for r in await runs.list_by_status("running")] == ["t-early", "t-late"]
    assert [r.thread_id for r in await runs.list_by_status("done")] == ["t-done"]
    assert await runs.list_by_status("error") == []


async def test_setup_indexes_status_task_id_and_updated_at(runs: RunStore, mongo_db: Db) -> None:
    await runs.setup()  # idempotent
    indexes = await mongo_db[COLLECTION_NAME].index_information()
    keys = {tuple(name for name, _ in info["key"]) for info in indexes.values()}
    assert {("status",), ("task_id",), ("updated_at",)} <= keys


async def test_recent_returns_the_latest_updated_runs_first_within_the_limit(runs: RunStore, clock: FakeClock) -> None:
    for thread_id, created in (("t-old", 100.0), ("t-mid", 200.0), ("t-new", 300.0)):
        clock.now = created
        await runs.create(record(thread_id, created_at=created))
    clock.now = 1000.0
    await runs.update("t-old", status="done", summary="finished last")  # the oldest run was touched last

    assert [r.thread_id for r in await runs.recent(2)] == ["t-old", "t-new"]
    assert [r.thread_id for r in await runs.recent(200)] == ["t-old", "t-new", "t-mid"]
    assert (await runs.recent(1))[0].summary == "finished last"
    with pytest.raises(ValueError, match="limit must be at least 1"):
        await runs.recent(0)


async def test_claim_moves_a_running_run_to_the_new_pod_exactly_once(runs: RunStore) -> None:
    await runs.create(record("thread-orphan", pod_id="dead-pod"))

    results = [await runs.claim("thread-orphan", from_pod="dead-pod", to_pod=pod) for pod in ("pod-a", "pod-b")]

    assert results == [True, False]
    assert (await runs.get("thread-orphan")).pod_id == "pod-a"


async def test_claim_refuses_a_run_that_is_not_running(runs: RunStore) -> None:
    await runs.create(record("thread-done", status="done", pod_id="dead-pod"))
    assert await runs.claim("thread-done", from_pod="dead-pod", to_pod="pod-a") is False


async def test_transition_lets_exactly_one_of_racing_requests_win(runs: RunStore) -> None:
    await runs.create(record("thread-waiting", status="interrupted", interrupt_action="commit"))

    results = await asyncio.gather(*(
        runs.transition("thread-waiting", from_status="interrupted", status="running", pod_id=f"pod-{i}")
        for i in range(10)
    ))

    assert sorted(results) == [False] * 9 + [True]
    assert (await runs.get("thread-waiting")).status == "running"
    assert await runs.transition("thread-waiting", from_status="interrupted", status="error") is False


async def test_upsert_creates_a_missing_run_with_its_identity(runs: RunStore, clock: FakeClock) -> None:
    clock.now = 700.0
    await runs.upsert("thread-lost", task_id="task-9", client_id="client-9", pod_id="pod-a", created_at=650.0,
                      status="done", summary="finished", usage={"tokens": 12})

    stored = await runs.get("thread-lost")
    assert stored is not None
    assert (stored.task_id, stored.client_id, stored.pod_id, stored.status, stored.summary, stored.usage) == (
        "task-9", "client-9", "pod-a", "done", "finished", {"tokens": 12})
    assert (stored.created_at, stored.updated_at) == (650.0, 700.0)
    assert [r.thread_id for r in await runs.list_by_status("done")] == ["thread-lost"]


async def test_upsert_of_an_existing_run_sets_fields_and_keeps_its_identity(runs: RunStore, clock: FakeClock) -> None:
    await runs.create(record(pod_id="pod-a"))
    clock.now = 900.0
    await runs.upsert("thread-1", task_id="other", client_id="other", pod_id="pod-z", status="error", error="boom")

    stored = await runs.get("thread-1")
    assert stored is not None
    assert (stored.task_id, stored.client_id, stored.pod_id) == ("task-1", "client-1", "pod-a")
    assert (stored.created_at, stored.status, stored.error, stored.updated_at) == (100.0, "error", "boom", 900.0)
    with pytest.raises(ValueError, match="created_at_typo"):
        await runs.upsert("thread-1", task_id="t", client_id="c", created_at_typo=1.0)


async def test_record_progress_writes_only_a_run_running_on_that_pod(runs: RunStore) -> None:
    await runs.create(record("t-mine", pod_id="pod-a"))
    await runs.create(record("t-adopted", pod_id="pod-b"))
    await runs.create(record("t-ended", status="done", pod_id="pod-a", percent=100.0))
    usage = {"tokens": 30, "by_node_tier": {"intake/LOCAL_FAST": {"prompt_tokens": 20, "completion_tokens": 10}}}

    written = [await runs.record_progress(t, pod_id="pod-a", usage=usage, percent=42.0)
               for t in ("t-mine", "t-adopted", "t-ended", "t-missing")]

    assert written == [True, False, False, False]
    mine, adopted, ended = [await runs.get(t) for t in ("t-mine", "t-adopted", "t-ended")]
    assert (mine.usage, mine.percent, mine.status) == (usage, 42.0, "running")
    assert (adopted.usage, adopted.percent) == ({}, 0.0)
    assert (ended.usage, ended.percent, ended.status) == ({}, 100.0, "done")
    assert await runs.get("t-missing") is None


async def test_transition_and_claim_never_create_a_missing_run(runs: RunStore, mongo_db: Db) -> None:
    assert await runs.transition("t-none", from_status="interrupted", status="running", pod_id="pod-a") is False
    assert await runs.claim("t-none", from_pod=None, to_pod="pod-a") is False
    assert await mongo_db[COLLECTION_NAME].count_documents({}) == 0
