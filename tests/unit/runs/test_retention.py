"""Checkpoint retention (app/runs/retention.py) on nx-27017 with the real MongoDBSaver: the
checkpoints of runs ended long ago go, their records stay and keep their place in the list;
everything a run could still be resumed from, or was written recently, stays."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.mongodb import MongoDBSaver
from langgraph.graph import END, START, StateGraph
from pymongo import MongoClient
from typing_extensions import TypedDict

from app.dev.embedded_mongo import EmbeddedMongo
from app.persistence.runs import COLLECTION_NAME, RunRecord, RunStore
from app.runs.retention import CheckpointRetention
from tests.support import FakeClock

DAY = 86400.0


class Counter(TypedDict, total=False):
    n: int


@pytest.fixture
def saver(mongo_server: EmbeddedMongo, mongo_db_name: str) -> Iterator[MongoDBSaver]:
    client: MongoClient[dict[str, Any]]
    with MongoClient(mongo_server.url) as client:
        yield MongoDBSaver(client, db_name=mongo_db_name + "_checkpoints")


def checkpoint(saver: MongoDBSaver, thread_id: str) -> None:
    """A two-node run of the thread: a few checkpoints and writes in MongoDB."""
    builder = StateGraph(Counter)
    builder.add_node("one", lambda state: {"n": state.get("n", 0) + 1})
    builder.add_node("two", lambda state: {"n": state.get("n", 0) + 1})
    builder.add_edge(START, "one")
    builder.add_edge("one", "two")
    builder.add_edge("two", END)
    builder.compile(checkpointer=saver).invoke({"n": 0}, {"configurable": {"thread_id": thread_id}})


def kept(saver: MongoDBSaver, thread_id: str) -> int:
    return (saver.checkpoint_collection.count_documents({"thread_id": thread_id})
            + saver.writes_collection.count_documents({"thread_id": thread_id}))


async def record(runs: RunStore, clock: FakeClock, thread_id: str, status: str, ended_days_ago: float) -> None:
    clock.now = 1_000_000.0 - ended_days_ago * DAY
    await runs.create(RunRecord(thread_id=thread_id, task_id=f"task-{thread_id}", client_id="c", status="running",
                                created_at=clock.now, updated_at=clock.now))
    await runs.update(thread_id, status=status)


async def test_only_the_checkpoints_of_runs_ended_longer_ago_than_the_retention_go(mongo_db: Any,
                                                                                  saver: MongoDBSaver) -> None:
    clock = FakeClock()
    runs = RunStore(mongo_db[COLLECTION_NAME], clock=clock)
    cases = {"old-done": ("done", 31), "old-error": ("error", 45), "recent-done": ("done", 29),
             "old-waiting": ("interrupted", 60), "old-running": ("running", 60)}
    for thread_id, (status, days) in cases.items():
        await record(runs, clock, thread_id, status, days)
        checkpoint(saver, thread_id)
    before = {thread_id: await runs.get(thread_id) for thread_id in cases}
    assert all(kept(saver, thread_id) > 0 for thread_id in cases)
    clock.now = 1_000_000.0
    retention = CheckpointRetention(runs=runs, checkpoints=saver, keep_seconds=30 * DAY, interval_seconds=3600,
                                    clock=clock)

    deleted = await retention.sweep_once()

    assert sorted(deleted) == ["old-done", "old-error"]
    assert {thread_id: kept(saver, thread_id) > 0 for thread_id in cases} == {
        "old-done": False, "old-error": False, "recent-done": True, "old-waiting": True, "old-running": True}
    for thread_id in cases:  # every record stays, in its place in the list (updated_at unchanged)
        after, earlier = await runs.get(thread_id), before[thread_id]
        assert after is not None and earlier is not None
        assert after.updated_at == earlier.updated_at and after.status == earlier.status
        assert after.checkpoints_deleted_at == (clock.now if thread_id in deleted else None)
    assert await retention.sweep_once() == []  # nothing deleted twice


async def test_the_service_sweeps_at_start_and_stops_cleanly(mongo_db: Any, saver: MongoDBSaver) -> None:
    clock = FakeClock()
    runs = RunStore(mongo_db[COLLECTION_NAME], clock=clock)
    await record(runs, clock, "ended", "done", 2)
    checkpoint(saver, "ended")
    clock.now = 1_000_000.0
    retention = CheckpointRetention(runs=runs, checkpoints=saver, keep_seconds=DAY, interval_seconds=3600,
                                    clock=clock)
    await retention.start()
    try:
        async with asyncio.timeout(10):  # the first sweep runs at start, in the background
            while (found := await runs.get("ended")) is None or found.checkpoints_deleted_at is None:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
    finally:
        await retention.stop()
    assert kept(saver, "ended") == 0

