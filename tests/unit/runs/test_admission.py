"""Admission against a real nx-27017: the pod's semaphore, the cluster lock, and one release."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from app.persistence.lock import COLLECTION_NAME, OrchestrationLock
from app.persistence.mongo import MongoTimeouts, create_client
from app.runs.admission import Admission
from app.runs.errors import RunBusyError
from tests.support import free_port

Db = AsyncDatabase[dict[str, Any]]


def admission(db: Db, pod_id: str, *, slots: int = 1, cluster_slots: int | None = None) -> Admission:
    lock = OrchestrationLock(db[COLLECTION_NAME], pod_id=pod_id, slots=cluster_slots or slots)
    return Admission(lock, slots=slots)


async def test_a_full_pod_refuses_and_a_released_slot_admits_again(mongo_db: Db) -> None:
    pod = admission(mongo_db, "pod-a")
    slot = await pod.admit("t1")
    assert pod.busy and slot.holds()
    with pytest.raises(RunBusyError):
        await pod.admit("t2")

    await slot.release()
    await slot.release()  # once: a second release frees nothing more

    assert not pod.busy and not slot.holds()
    again = await pod.admit("t3")
    with pytest.raises(RunBusyError):  # the double release did not leave a spare permit
        await pod.admit("t4")
    await again.release()


async def test_a_cluster_slot_held_by_another_pod_refuses_without_holding_this_pods_semaphore(mongo_db: Db) -> None:
    other, here = admission(mongo_db, "pod-a"), admission(mongo_db, "pod-b")
    held = await other.admit("t1")
    assert await here.holder("t1")

    with pytest.raises(RunBusyError):
        await here.admit("t2")

    assert not here.busy
    await held.release()
    taken = await here.admit("t2")
    assert taken.lease.pod_id == "pod-b"
    await taken.release()


async def test_a_lock_error_frees_the_semaphore() -> None:
    unreachable = create_client(f"mongodb://127.0.0.1:{free_port()}", timeouts=MongoTimeouts(connect_seconds=0.2))
    try:
        pod = Admission(OrchestrationLock(unreachable["db"][COLLECTION_NAME], pod_id="pod-a", slots=1), slots=1)
        with pytest.raises(PyMongoError):
            await pod.admit("t1")
        assert not pod.busy
    finally:
        await unreachable.close()


async def test_shutdown_refuses_new_work(mongo_db: Db) -> None:
    pod = admission(mongo_db, "pod-a")
    pod.stop_accepting()
    assert not pod.accepting
    with pytest.raises(RunBusyError):
        await pod.admit("t1")
    assert not pod.busy


async def test_release_frees_the_semaphore_even_when_cancelled_during_the_lock_write(mongo_db: Db) -> None:
    pod = admission(mongo_db, "pod-a")
    slot = await pod.admit("t1")
    release = asyncio.create_task(slot.release())
    await asyncio.sleep(0)
    release.cancel()
    await asyncio.gather(release, return_exceptions=True)
    assert not pod.busy


async def test_free_own_stale_frees_what_an_earlier_life_of_the_pod_left(mongo_db: Db) -> None:
    crashed = admission(mongo_db, "pod-a", slots=2)
    slot = await crashed.admit("t1")
    slot.lease._heartbeat.cancel()  # a crash: no release, no heartbeat
    other = await admission(mongo_db, "pod-b", slots=2).admit("t2")

    restarted = admission(mongo_db, "pod-a", slots=2)
    assert await restarted.free_own_stale() == 1

    assert not await restarted.holder("t1") and await restarted.holder("t2")
    await other.release()
