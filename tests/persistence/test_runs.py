"""RunStore against a real nx-27017."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from app.persistence.runs import COLLECTION_NAME, RunRecord, RunStore
from tests.support import FakeClock

Db = AsyncDatabase[dict[str, Any]]


def record(thread_id: str = "thread-1", *, status: Any = "running", created_at: float = 100.0, **extra: Any) -> RunRecord:
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
    with pytest.raises(ValueError):
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
    keys = {tuple(name for name, _ in info["key"]) for info in (await mongo_db[COLLECTION_NAME].index_information()).values()}
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
    with pytest.raises(ValueError):
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
