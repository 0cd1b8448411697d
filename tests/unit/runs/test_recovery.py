"""RecoveryService against a real nx-27017, with a hand-written adopter in place of the manager."""

from __future__ import annotations

import asyncio
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from app.persistence import lock as lock_module
from app.persistence import runs as runs_module
from app.persistence.lock import OrchestrationLock
from app.persistence.runs import RunRecord, RunStore
from app.runs.admission import Admission, Slot
from app.runs.crash_recovery import RecoveryService

Db = AsyncDatabase[dict[str, Any]]


class Adopter:
    """Records what it is handed; `refuse` plays a run with nothing to continue."""

    def __init__(self, *, refuse: set[str] | None = None) -> None:
        self.here: set[str] = set()
        self.adopted: list[tuple[str, str]] = []
        self.slots: list[Slot] = []
        self._refuse = refuse or set()

    def runs_here(self, thread_id: str) -> bool:
        return thread_id in self.here

    async def adopt(self, record: RunRecord, slot: Slot) -> bool:
        if record.thread_id in self._refuse:
            return False
        self.here.add(record.thread_id)
        self.adopted.append((record.thread_id, slot.token))
        self.slots.append(slot)
        return True

    async def reannounce(self, record: RunRecord) -> None:
        raise AssertionError(f"{record.thread_id} was announced; these tests end no run")


class Pod:
    def __init__(self, db: Db, pod_id: str, *, slots: int = 2, adopter: Adopter | None = None) -> None:
        self.lock = OrchestrationLock(db[lock_module.COLLECTION_NAME], pod_id=pod_id, slots=slots)
        self.admission = Admission(self.lock, slots=slots)
        self.runs = RunStore(db[runs_module.COLLECTION_NAME])
        self.adopter = adopter or Adopter()
        self.recovery = RecoveryService(runs=self.runs, admission=self.admission, adopter=self.adopter,
                                        interval_seconds=0.05)

    async def release_all(self) -> None:
        for slot in self.adopter.slots:
            await slot.release()


async def adoption(pod: Pod, count: int = 1) -> None:
    async def poll() -> None:
        while len(pod.adopter.adopted) < count:  # noqa: ASYNC110 (the adopter offers no event to wait on)
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), 5)


async def running(pod: Pod, thread_id: str, on_pod: str, created_at: float = 1.0) -> None:
    await pod.runs.create(RunRecord(thread_id=thread_id, task_id="t", client_id="c", status="running",
                                    pod_id=on_pod, created_at=created_at, updated_at=created_at))


async def test_a_restarted_pod_frees_its_old_slot_and_adopts_its_run_at_once(mongo_db: Db) -> None:
    before = Pod(mongo_db, "pod-a", slots=1)
    crashed = await before.admission.admit("thread-1")
    crashed.lease._heartbeat.cancel()  # killed: the slot looks alive for the stale time
    await running(before, "thread-1", "pod-a")

    restarted = Pod(mongo_db, "pod-a", slots=1)
    await restarted.recovery.start(loops=1)
    await adoption(restarted)

    [(thread_id, token)] = restarted.adopter.adopted
    assert thread_id == "thread-1" and token != crashed.token
    stored = await restarted.runs.get("thread-1")
    assert stored is not None and (stored.pod_id, stored.fence) == ("pod-a", token)
    await restarted.release_all()
    await restarted.recovery.stop()


async def test_a_run_another_live_pod_holds_is_left_alone(mongo_db: Db) -> None:
    owner = Pod(mongo_db, "pod-a")
    slot = await owner.admission.admit("thread-1")
    await running(owner, "thread-1", "pod-a")
    other = Pod(mongo_db, "pod-b")

    assert await other.recovery.recover_once() == []

    await slot.release()  # pod-a shut down and left the run for adoption
    assert await other.recovery.recover_once() == ["thread-1"]
    stored = await other.runs.get("thread-1")
    assert stored is not None and stored.pod_id == "pod-b"
    await other.release_all()


async def test_runs_are_adopted_oldest_first_while_slots_last_and_not_twice(mongo_db: Db) -> None:
    pod = Pod(mongo_db, "pod-b", slots=2)
    await running(pod, "thread-new", "pod-gone", created_at=3)
    await running(pod, "thread-old", "pod-gone", created_at=1)
    await running(pod, "thread-mid", "pod-gone", created_at=2)

    assert await pod.recovery.recover_once() == ["thread-old", "thread-mid"]
    assert await pod.recovery.recover_once() == []  # no free slot, and the two run here

    await pod.release_all()
    pod.adopter.slots.clear()
    assert await pod.recovery.recover_once() == ["thread-new"]
    await pod.release_all()


async def test_of_two_pods_recovering_at_once_one_adopts(mongo_db: Db) -> None:
    a, b = Pod(mongo_db, "pod-a"), Pod(mongo_db, "pod-b")
    await running(a, "thread-1", "pod-gone")

    found = await asyncio.gather(a.recovery.recover_once(), b.recovery.recover_once())

    assert sorted(found) == [[], ["thread-1"]]
    await a.release_all()
    await b.release_all()
    assert not a.admission.busy and not b.admission.busy  # the loser gave its slot back


async def test_a_run_with_nothing_to_continue_gives_its_slot_back(mongo_db: Db) -> None:
    pod = Pod(mongo_db, "pod-b", slots=1, adopter=Adopter(refuse={"thread-1"}))
    await running(pod, "thread-1", "pod-gone")

    assert await pod.recovery.recover_once() == []

    assert not pod.admission.busy and not await pod.admission.holder("thread-1")


async def test_the_loop_keeps_looking_until_stopped(mongo_db: Db) -> None:
    pod = Pod(mongo_db, "pod-b")
    await pod.recovery.start()
    await running(pod, "thread-late", "pod-gone")  # orphaned after the first round
    await adoption(pod)

    await pod.recovery.stop()
    await running(pod, "thread-after", "pod-gone")
    await asyncio.sleep(0.2)  # four intervals

    assert [thread_id for thread_id, _ in pod.adopter.adopted] == ["thread-late"]
    await pod.release_all()
