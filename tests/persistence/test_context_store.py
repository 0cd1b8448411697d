"""ContextStore against a real nx-27017."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from app.observability.redaction import REDACTED, Redactor
from app.persistence.context_store import COLLECTION_NAME, ContextStore

Db = AsyncDatabase[dict[str, Any]]


class FakeClock:
    """Starts at the real time (a past expire_at would let the TTL index delete the entry),
    rounded to whole seconds because BSON keeps only milliseconds."""

    def __init__(self) -> None:
        self.start = self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def store(mongo_db: Db) -> ContextStore:
    store = ContextStore(mongo_db[COLLECTION_NAME])
    await store.setup()
    return store


def as_utc(value: datetime | str) -> datetime:
    """nx-27017 returns a datetime written by $set on an existing document as a string."""
    parsed = datetime.fromisoformat(value) if isinstance(value, str) else value
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


async def test_setup_creates_unique_key_and_ttl_indexes_idempotently(mongo_db: Db) -> None:
    store = ContextStore(mongo_db[COLLECTION_NAME])
    await store.setup()
    await store.setup()
    indexes = list((await mongo_db[COLLECTION_NAME].index_information()).values())
    by_key = {tuple(name for name, _ in info["key"]): info for info in indexes}
    assert by_key[("run_id", "scope", "scope_key")].get("unique") is True
    assert by_key[("expire_at",)].get("expireAfterSeconds") == 0


async def test_save_get_and_list_in_natural_key_order(store: ContextStore) -> None:
    for goal in (10, 2, 0):
        await store.save("task-1", "goal", store.goal_key(goal), f"goal {goal} done")
    await store.save("task-1", "step", store.step_key(0, 1), "step summary", {"files": ["a.py"]})
    await store.save("task-2", "goal", "goal/0", "another task")

    entry = await store.get("task-1", "step", "goal/0/step/1")
    assert entry is not None
    assert (entry.summary, entry.detail) == ("step summary", {"files": ["a.py"]})
    assert entry.created_at.tzinfo is not None
    assert (await store.get("task-1", "goal", "goal/0")).detail == {}  # type: ignore[union-attr]
    assert await store.get("task-1", "goal", "goal/99") is None

    assert [e.scope_key for e in await store.list("task-1", "goal")] == ["goal/0", "goal/2", "goal/10"]
    assert [(e.scope, e.scope_key) for e in await store.list("task-1")] == [
        ("goal", "goal/0"),
        ("step", "goal/0/step/1"),
        ("goal", "goal/2"),
        ("goal", "goal/10"),
    ]


async def test_upsert_keeps_created_at_and_refreshes_expire_at(mongo_db: Db) -> None:
    clock = FakeClock()
    t0 = clock.start
    store = ContextStore(mongo_db[COLLECTION_NAME], ttl_days=7, clock=clock)
    await store.setup()
    collection = mongo_db[COLLECTION_NAME]

    await store.save("task-1", "step", "goal/0/step/0", "first")
    raw = await collection.find_one({"run_id": "task-1"})
    assert raw is not None and as_utc(raw["expire_at"]) == t0 + timedelta(days=7)

    clock.now = t0 + timedelta(hours=5)
    await store.save("task-1", "step", "goal/0/step/0", "second", {"n": 2})

    entry = await store.get("task-1", "step", "goal/0/step/0")
    assert entry is not None
    assert (entry.summary, entry.detail, entry.created_at) == ("second", {"n": 2}, t0)
    assert await collection.count_documents({}) == 1
    raw = await collection.find_one({"run_id": "task-1"})
    assert raw is not None and as_utc(raw["expire_at"]) == t0 + timedelta(hours=5, days=7)


async def test_expire_at_is_about_now_plus_ttl_with_the_real_clock(mongo_db: Db) -> None:
    store = ContextStore(mongo_db[COLLECTION_NAME], ttl_days=30)
    await store.save("task-1", "task", "final", "all done")
    raw = await mongo_db[COLLECTION_NAME].find_one({"run_id": "task-1"})
    assert raw is not None
    expected = datetime.now(UTC) + timedelta(days=30)
    assert abs(as_utc(raw["expire_at"]) - expected) < timedelta(seconds=30)


async def test_save_nowait_then_drain_persists_everything_in_call_order(store: ContextStore) -> None:
    for step in range(20):
        store.save_nowait("task-1", "step", store.step_key(0, step), f"step {step}")
    for version in range(5):
        store.save_nowait("task-1", "goal", "goal/0", f"version {version}")
    await store.drain()

    assert len(await store.list("task-1", "step")) == 20
    goal = await store.get("task-1", "goal", "goal/0")
    assert goal is not None and goal.summary == "version 4"
    await store.drain()  # nothing pending: returns at once


async def test_save_nowait_logs_failures_instead_of_raising(
    store: ContextStore, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="app.persistence.context_store"):
        store.save_nowait("task-1", "step", "goal/0/step/0", "bad", {"not_bson": object()})
        store.save_nowait("task-1", "step", "goal/0/step/1", "good")
        await store.drain()
    assert "background context save failed" in caplog.text
    assert await store.get("task-1", "step", "goal/0/step/0") is None
    assert await store.get("task-1", "step", "goal/0/step/1") is not None


async def test_epic_review_context_is_one_line_per_goal(store: ContextStore) -> None:
    await store.save("task-1", "goal", "goal/1", "Build the API\nwith tests")
    await store.save("task-1", "goal", "goal/0", "Design the schema")
    await store.save("task-1", "step", "goal/0/step/0", "a step")
    assert await store.assemble_epic_review_context("task-1") == (
        "goal/0: Design the schema\ngoal/1: Build the API with tests"
    )


async def test_summary_and_detail_are_stored_redacted(mongo_db: Db) -> None:
    store = ContextStore(mongo_db[COLLECTION_NAME], redact=Redactor(["configured-api-key"]))
    await store.save("t1", "agent_result", "goal/0/step/0", "failed: configured-api-key rejected",
                     {"log_tail": "Bearer abcdef0123456789abcdef\nok", "exit_code": 1})
    raw = await mongo_db[COLLECTION_NAME].find_one({"run_id": "t1"})
    assert raw is not None and raw["summary"] == f"failed: {REDACTED} rejected"
    assert raw["detail"] == {"log_tail": f"Bearer {REDACTED}\nok", "exit_code": 1}


async def test_setup_moves_entries_keyed_by_task_to_the_run_key(mongo_db: Db) -> None:
    # Before entries belonged to runs: keyed (task_id, scope, scope_key) under another index.
    collection = mongo_db[COLLECTION_NAME]
    await collection.create_index([("task_id", 1), ("scope", 1), ("scope_key", 1)], unique=True,
                                  name="task_scope_key_unique")
    await collection.insert_one({"task_id": "old-run", "scope": "tracker", "scope_key": "k1", "summary": "created",
                                 "detail": {"state": "done"}, "created_at": datetime.now(UTC)})
    store = ContextStore(collection)
    await store.setup()

    entry = await store.get("old-run", "tracker", "k1")
    assert entry is not None and entry.detail == {"state": "done"}
    assert "task_scope_key_unique" not in await collection.index_information()
    await store.save("new-run", "tracker", "k1", "created")  # no clash on the old index
    assert await store.get("new-run", "tracker", "k1") is not None


async def test_previous_final_is_the_newest_other_run_of_the_chat(mongo_db: Db) -> None:
    start = datetime.now(UTC)  # entries expire TTL days after their write: stay near now
    times = iter(start + timedelta(seconds=n) for n in range(1, 10))
    store = ContextStore(mongo_db[COLLECTION_NAME], clock=lambda: next(times))
    await store.setup()
    await store.save("run-1", "task", "final", "first request done", chat_id="chat-a")
    await store.save("run-2", "task", "final", "second request done", chat_id="chat-a")
    await store.save("run-x", "task", "final", "another chat", chat_id="chat-b")
    await store.save("run-2", "goal", "goal/0", "not a final entry")

    previous = await store.previous_final("chat-a", before_run="run-3")
    assert previous is not None and (previous.run_id, previous.summary) == ("run-2", "second request done")
    own = await store.previous_final("chat-a", before_run="run-2")  # a run never reads its own end
    assert own is not None and own.run_id == "run-1"
    assert await store.previous_final("chat-c", before_run="run-1") is None
