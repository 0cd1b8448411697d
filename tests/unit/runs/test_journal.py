"""RunJournal: the run record written as a segment goes, against a real nx-27017 (one stopped and
started again for the outage cases)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pymongo import AsyncMongoClient

from app.persistence.mongo import MongoTimeouts, create_client, ping
from app.persistence.outage import MongoOutage
from app.persistence.runs import COLLECTION_NAME, RunRecord, RunStore
from app.runs.journal import RunJournal
from tests.fixtures.mongo import RestartableMongo

#: Longer than pymongo's 0.5 s between checks of a server that went away, so one operation can
#: find it back once it answers again.
FAST = MongoTimeouts(connect_seconds=1.0, socket_seconds=2.0)


class TickingClock:
    """Counts the store's timestamped writes (each `record_progress` or `upsert` reads it once)."""

    def __init__(self) -> None:
        self.ticks = 0

    def __call__(self) -> float:
        self.ticks += 1
        return 1000.0 + self.ticks


def running(thread_id: str, pod_id: str = "pod-a") -> RunRecord:
    return RunRecord(thread_id=thread_id, task_id="task-1", client_id="client-1", status="running", pod_id=pod_id,
                     created_at=50.0, updated_at=50.0)


def journal_of(store: RunStore, thread_id: str, **kwargs: Any) -> RunJournal:
    return RunJournal(store, thread_id=thread_id, task_id="task-1", client_id="client-1", pod_id="pod-a", **kwargs)


@pytest.fixture
def clock() -> TickingClock:
    return TickingClock()


@pytest.fixture
async def store(mongo_db: Any, clock: TickingClock) -> RunStore:
    return RunStore(mongo_db[COLLECTION_NAME], clock=clock)


@pytest.fixture
async def outage_client(restartable_mongo: RestartableMongo) -> AsyncIterator[AsyncMongoClient[dict[str, Any]]]:
    client = create_client(restartable_mongo.url, timeouts=FAST)
    yield client
    await client.close()


@pytest.fixture
def outage_store(outage_client: AsyncMongoClient[dict[str, Any]], clock: TickingClock) -> RunStore:
    return RunStore(outage_client["t_" + uuid.uuid4().hex[:12]][COLLECTION_NAME], clock=clock)


async def test_node_boundary_writes_coalesce_to_the_latest_figures(store: RunStore, clock: TickingClock) -> None:
    await store.create(running("t-1"))
    journal = journal_of(store, "t-1")
    figures = {"tokens": 1}
    journal.track(lambda: ({"tokens": figures["tokens"]}, float(figures["tokens"])))

    journal.note()
    await asyncio.sleep(0)  # the first write is in flight with tokens=1
    for tokens in range(2, 12):
        figures["tokens"] = tokens
        journal.note()
    await journal.flush()

    assert clock.ticks == 2  # the one in flight, then one more with the latest figures
    stored = await store.get("t-1")
    assert stored is not None and (stored.usage, stored.percent) == ({"tokens": 11}, 11.0)


async def test_the_outcome_comes_last(store: RunStore) -> None:
    await store.create(running("t-2"))
    journal = journal_of(store, "t-2")
    journal.track(lambda: ({"tokens": 5}, 20.0))
    journal.note()
    await journal.finish(status="done", summary="ok", usage={"tokens": 9}, percent=100.0)
    journal.note()  # a straggler after the outcome: the ended run is left alone
    await journal.flush()

    stored = await store.get("t-2")
    assert stored is not None
    assert (stored.status, stored.summary, stored.usage, stored.percent) == ("done", "ok", {"tokens": 9}, 100.0)
    assert (stored.task_id, stored.client_id, stored.pod_id, stored.created_at) == ("task-1", "client-1", "pod-a", 50.0)


async def test_the_outcome_waits_out_an_outage_and_lands_with_the_identity(
        restartable_mongo: RestartableMongo, outage_store: RunStore,
        outage_client: AsyncMongoClient[dict[str, Any]]) -> None:
    outage = MongoOutage(lambda: ping(outage_client), wait_seconds=30, first_delay=0.05, max_delay=0.2)
    restartable_mongo.stop()
    journal = journal_of(outage_store, "t-4", outage=outage)  # its record was lost: the outcome creates it
    restart = restartable_mongo.start_after(0.5)

    await journal.finish(status="done", summary="after the outage", percent=100.0)
    restart.result(timeout=60)

    stored = await outage_store.get("t-4")
    assert stored is not None
    assert (stored.status, stored.summary, stored.task_id, stored.client_id, stored.pod_id) == (
        "done", "after the outage", "task-1", "client-1", "pod-a")


async def test_node_boundary_writes_are_spaced_and_the_outcome_supersedes_a_waiting_one(
        store: RunStore, clock: TickingClock) -> None:
    await store.create(running("t-5"))
    journal = journal_of(store, "t-5", interval_seconds=30.0)
    figures = {"tokens": 1}
    journal.track(lambda: ({"tokens": figures["tokens"]}, 10.0))

    journal.note()  # the first boundary writes at once
    await asyncio.sleep(0)
    await asyncio.wait_for(journal.flush(), 5)
    figures["tokens"] = 2
    journal.note()  # within the interval: waits
    await asyncio.sleep(0.05)
    stored = await store.get("t-5")
    assert clock.ticks == 1 and stored is not None and stored.usage == {"tokens": 1}

    await asyncio.wait_for(journal.finish(status="done", usage={"tokens": 2}, percent=100.0), 5)

    assert clock.ticks == 2  # the outcome only: the waiting write was dropped, its figures are the outcome's
    stored = await store.get("t-5")
    assert stored is not None and (stored.status, stored.usage) == ("done", {"tokens": 2})


async def test_a_write_waiting_for_its_interval_lands_without_another_boundary(store: RunStore,
                                                                              clock: TickingClock) -> None:
    await store.create(running("t-6"))
    journal = journal_of(store, "t-6", interval_seconds=0.2)
    figures = {"tokens": 1}
    journal.track(lambda: ({"tokens": figures["tokens"]}, float(figures["tokens"])))
    journal.note()
    await asyncio.wait_for(journal.flush(), 5)
    figures["tokens"] = 7
    journal.note()

    async def landed() -> None:
        # The record offers no event to wait on; the caller bounds the wait.
        while (stored := await store.get("t-6")) is None or stored.usage != {"tokens": 7}:  # noqa: ASYNC110
            await asyncio.sleep(0.02)

    await asyncio.wait_for(landed(), 5)  # a crash from here on loses nothing of it
    assert clock.ticks == 2
