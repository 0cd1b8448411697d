"""OrchestrationLock against a real nx-27017: slots, races, staleness, heartbeat."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from app.dev.embedded_mongo import EmbeddedMongo
from app.persistence.lock import COLLECTION_NAME, LockLease, OrchestrationLock, lost_after
from app.persistence.mongo import MongoTimeouts, create_client
from tests.support import FakeClock

Db = AsyncDatabase[dict[str, Any]]


def make_lock(db: Db, pod_id: str, slots: int = 1, **kwargs: Any) -> OrchestrationLock:
    return OrchestrationLock(db[COLLECTION_NAME], pod_id=pod_id, slots=slots, **kwargs)


async def slot_doc(db: Db, slot_id: str) -> dict[str, Any]:
    doc = await db[COLLECTION_NAME].find_one({"_id": slot_id})
    assert doc is not None
    return doc


async def wait_for(predicate: Any, timeout: float = 3.0) -> None:
    async def poll() -> None:
        while not await predicate():  # noqa: ASYNC110 (polls MongoDB, which notifies nothing here)
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


def heartbeat_tasks() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("lock-heartbeat:") and not t.done()]


async def test_acquire_then_release_frees_the_slot_and_stops_the_heartbeat(mongo_db: Db) -> None:
    lock = make_lock(mongo_db, "pod-a")
    lease = await lock.acquire("thread-1")
    assert lease is not None and lease.thread_id == "thread-1"
    doc = await slot_doc(mongo_db, lease.slot_id)
    assert (doc["locked_by"], doc["thread_id"]) == ("pod-a", "thread-1")
    assert len(heartbeat_tasks()) == 1

    await lease.release()
    await lease.release()  # idempotent

    doc = await slot_doc(mongo_db, lease.slot_id)
    assert (doc["locked_by"], doc["thread_id"]) == (None, None)
    assert heartbeat_tasks() == []
    again = await lock.acquire("thread-2")
    assert again is not None
    await again.release()


async def test_single_slot_refuses_a_second_acquire(mongo_db: Db) -> None:
    lock = make_lock(mongo_db, "pod-a")
    lease = await lock.acquire("thread-1")
    assert lease is not None
    assert await make_lock(mongo_db, "pod-b").acquire("thread-2") is None
    assert await lock.acquire("thread-3") is None
    await lease.release()


async def test_two_slots_allow_two_orchestrations_and_refuse_the_third(mongo_db: Db) -> None:
    lock = make_lock(mongo_db, "pod-a", slots=2)
    first, second = await lock.acquire("t1"), await lock.acquire("t2")
    assert first is not None and second is not None
    assert first.slot_id != second.slot_id
    assert await lock.acquire("t3") is None
    state = await lock.slots_state()
    assert [s["thread_id"] for s in state] == ["t1", "t2"]
    await first.release()
    await second.release()


async def test_twenty_racing_pods_get_exactly_one_slot(mongo_db: Db) -> None:
    locks = [make_lock(mongo_db, f"pod-{i}") for i in range(20)]
    leases = await asyncio.gather(*(lock.acquire(f"thread-{i}") for i, lock in enumerate(locks)))
    winners = [lease for lease in leases if lease is not None]
    assert len(winners) == 1
    state = await locks[0].slots_state()
    assert len(state) == 1 and state[0]["thread_id"] == winners[0].thread_id
    assert await mongo_db[COLLECTION_NAME].count_documents({}) == 1
    await winners[0].release()


async def test_stale_slot_is_taken_over_and_the_takeover_is_logged(
    mongo_db: Db, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    crashed = make_lock(mongo_db, "pod-dead", clock=clock, stale_seconds=300)
    lease = await crashed.acquire("thread-old")
    assert lease is not None
    survivor = make_lock(mongo_db, "pod-alive", clock=clock, stale_seconds=300)

    clock.now += 299
    assert await survivor.acquire("thread-new") is None  # not stale yet

    clock.now += 2
    assert (await survivor.slots_state())[0]["stale"] is True
    assert await survivor.holder("thread-old") is None  # a stale holder does not count
    with caplog.at_level(logging.WARNING, logger="app.persistence.lock"):
        taken = await survivor.acquire("thread-new")
    assert taken is not None and taken.slot_id == lease.slot_id
    assert "took over stale lock slot" in caplog.text and "pod-dead" in caplog.text
    doc = await slot_doc(mongo_db, taken.slot_id)
    assert (doc["locked_by"], doc["thread_id"], doc["locked_at"]) == ("pod-alive", "thread-new", clock.now)
    await lease.release()
    await taken.release()


async def test_heartbeat_refreshes_locked_at(mongo_db: Db) -> None:
    clock = FakeClock(500.0)
    lock = make_lock(mongo_db, "pod-a", clock=clock, heartbeat_seconds=0.05)
    lease = await lock.acquire("thread-1")
    assert lease is not None
    clock.now = 800.0

    async def refreshed() -> bool:
        return (await slot_doc(mongo_db, lease.slot_id))["locked_at"] == 800.0

    await wait_for(refreshed)
    assert not lease.lost.is_set()
    await lease.release()


async def test_taken_over_lease_sets_lost_and_its_release_leaves_the_new_owner(mongo_db: Db) -> None:
    hung_clock = FakeClock(1000.0)  # a hung pod's heartbeats keep writing an old time
    hung = make_lock(mongo_db, "pod-hung", clock=hung_clock, heartbeat_seconds=0.05, stale_seconds=300)
    lease = await hung.acquire("thread-old")
    assert lease is not None
    other = make_lock(mongo_db, "pod-other", clock=FakeClock(1000.0 + 301), stale_seconds=300)
    taken = await other.acquire("thread-new")
    assert taken is not None

    await asyncio.wait_for(lease.lost.wait(), timeout=3)
    await lease.release()

    doc = await slot_doc(mongo_db, taken.slot_id)
    assert (doc["locked_by"], doc["thread_id"]) == ("pod-other", "thread-new")
    assert heartbeat_tasks() == [taken._heartbeat]
    await taken.release()


async def test_release_by_non_owner_does_not_free_the_slot(mongo_db: Db) -> None:
    lock = make_lock(mongo_db, "pod-a")
    lease = await lock.acquire("thread-1")
    assert lease is not None
    impostor = LockLease(
        mongo_db[COLLECTION_NAME],
        slot_id=lease.slot_id,
        thread_id="thread-1",
        pod_id="pod-b",
        heartbeat_seconds=10,
        clock=FakeClock(),
    )
    await impostor.release()
    doc = await slot_doc(mongo_db, lease.slot_id)
    assert (doc["locked_by"], doc["thread_id"]) == ("pod-a", "thread-1")
    await lease.release()


async def test_holder_reports_the_live_slot_of_a_thread(mongo_db: Db) -> None:
    lock = make_lock(mongo_db, "pod-a", slots=2)
    lease = await lock.acquire("thread-1")
    assert lease is not None
    held = await lock.holder("thread-1")
    assert held is not None and held["_id"] == lease.slot_id and held["locked_by"] == "pod-a"
    assert await lock.holder("thread-2") is None
    await lease.release()
    assert await lock.holder("thread-1") is None


async def test_setup_is_idempotent_from_two_pods_and_keeps_held_slots(mongo_db: Db) -> None:
    a, b = make_lock(mongo_db, "pod-a", slots=3), make_lock(mongo_db, "pod-b", slots=3)
    await asyncio.gather(a.setup(), b.setup())
    lease = await a.acquire("thread-1")
    assert lease is not None
    await b.setup()
    await a.setup()
    assert await mongo_db[COLLECTION_NAME].count_documents({}) == 3
    assert (await slot_doc(mongo_db, lease.slot_id))["locked_by"] == "pod-a"
    await lease.release()


async def test_lease_as_async_context_manager_releases(mongo_db: Db) -> None:
    lock = make_lock(mongo_db, "pod-a")
    lease = await lock.acquire("thread-1")
    assert lease is not None
    async with lease:
        assert await lock.acquire("thread-2") is None
    assert (await slot_doc(mongo_db, lease.slot_id))["locked_by"] is None


def test_invalid_configuration_is_rejected() -> None:
    with pytest.raises(ValueError, match="slots must be >= 1"):
        OrchestrationLock(None, pod_id="p", slots=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="heartbeat_seconds must be shorter than stale_seconds"):
        OrchestrationLock(None, pod_id="p", slots=1, heartbeat_seconds=300, stale_seconds=300)  # type: ignore[arg-type]


async def test_release_pod_frees_only_the_slots_of_that_pod(mongo_db: Db) -> None:
    mine, other = make_lock(mongo_db, "restarted-pod", slots=3), make_lock(mongo_db, "other-pod", slots=3)
    await mine.setup()
    leases = [await mine.acquire("thread-a"), await other.acquire("thread-b")]
    for lease in leases:  # simulate a crash: no release, no heartbeat
        lease._heartbeat.cancel()

    assert await make_lock(mongo_db, "restarted-pod", slots=3).release_pod() == 1
    assert await other.holder("thread-b") is not None
    assert await mine.holder("thread-a") is None
    assert await mine.acquire("thread-c") is not None


async def test_every_acquire_of_a_slot_gets_a_new_fencing_token(mongo_db: Db) -> None:
    lock = make_lock(mongo_db, "pod-a", slots=2)
    first, second = await lock.acquire("t1"), await lock.acquire("t2")
    assert first is not None and second is not None
    assert (first.fence, second.fence) == (1, 1) and first.token != second.token  # a token names its slot
    await first.release()
    again = await lock.acquire("t3")
    assert again is not None and again.slot_id == first.slot_id
    assert again.fence == 2 and again.token not in (first.token, second.token)
    assert (await slot_doc(mongo_db, again.slot_id))["fence"] == 2
    await second.release()
    await again.release()


async def test_a_take_over_fences_the_old_lease_whose_release_then_frees_nothing(mongo_db: Db) -> None:
    hung = make_lock(mongo_db, "pod-a", clock=FakeClock(1000.0), stale_seconds=300)
    old = await hung.acquire("thread-1")
    assert old is not None
    # The same pod id and thread after a restart: only the fence tells the two leases apart.
    new = await make_lock(mongo_db, "pod-a", clock=FakeClock(1000.0 + 301), stale_seconds=300).acquire("thread-1")
    assert new is not None and new.fence == old.fence + 1

    await old.release()

    doc = await slot_doc(mongo_db, new.slot_id)
    assert (doc["locked_by"], doc["thread_id"], doc["fence"]) == ("pod-a", "thread-1", new.fence)
    await new.release()


async def test_lease_is_lost_by_its_own_deadline_when_mongodb_stops_answering(tmp_path: Any) -> None:
    server = EmbeddedMongo(work_dir=tmp_path)  # its own server: this test stops it
    server.start()
    # A failed heartbeat returns within the connect timeout; the default 5 s would outlast the test's deadline.
    client = create_client(server.url, timeouts=MongoTimeouts(connect_seconds=0.5))
    try:
        lock = OrchestrationLock(client["locks"][COLLECTION_NAME], pod_id="pod-a", slots=1,
                                 heartbeat_seconds=0.2, stale_seconds=2.0)
        lease = await lock.acquire("thread-1")
        assert lease is not None
        await asyncio.sleep(0.5)  # heartbeats succeed: the deadline moves on
        assert lease.holds() and not lease.lost.is_set()

        server.stop()
        stopped = time.monotonic()
        await asyncio.wait_for(lease.lost.wait(), timeout=5)

        # Lost by its deadline (stale minus two heartbeats after the last success, which came
        # before the stop), so before another pod may take the slot over.
        assert time.monotonic() - stopped < 2.0
        assert not lease.holds()
        await lease.release()  # no write attempted, nothing raised
        assert heartbeat_tasks() == []
    finally:
        await client.close()
        server.stop()


def test_lease_deadline_leaves_a_margin_of_two_heartbeats_at_most_half_the_stale_time() -> None:
    assert lost_after(10, 300) == 280
    assert lost_after(0.5, 2) == 1.0
    assert lost_after(10, 25) == 12.5
