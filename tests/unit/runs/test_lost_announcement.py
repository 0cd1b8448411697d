"""A run's end is two writes: the outcome on its record (fenced, `announced: false`), then the status
push into the outbox. A crash between them used to lose the status; now recovery's sweep marks the
ended runs whose push is in the outbox and announces the others. Real nx-27017, real outbox and
delivery, the fake Kotlin server."""

from __future__ import annotations

import time
from typing import Any

import httpx
from langgraph.checkpoint.memory import InMemorySaver

from app.clients.kotlin import STATUS_PATH
from app.config import Settings
from app.graph.builder import build_graph
from app.observability.metrics import Metrics
from app.persistence import lock as lock_module
from app.persistence import runs as runs_module
from app.persistence.lock import OrchestrationLock
from app.persistence.runs import RunStore
from app.runs.admission import Admission
from app.runs.crash_recovery import RecoveryService
from app.runs.ending import RunEnding
from app.runs.lifecycle import RunDriver
from app.schemas.kotlin import StatusPush
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.outbox import PushRig, push_rig
from tests.support import FakeClock

THREAD = "thread-T-1-0123abcd"


class Announcer:
    """The run manager's part in recovery: nothing runs here; announcements go to `RunEnding`."""

    def __init__(self, ending: RunEnding) -> None:
        self.ending = ending

    def runs_here(self, thread_id: str) -> bool:
        return False

    async def adopt(self, record: Any, slot: Any) -> bool:
        raise AssertionError("no running run to adopt in these tests")

    async def unannounced(self, records: list[Any]) -> list[Any]:
        return await self.ending.unannounced(records)

    async def reannounce(self, record: Any) -> None:
        await self.ending.reannounce(record)


def _recovery(rig: PushRig, runs: RunStore, db: Any, tmp_path: Any, **options: Any) -> RecoveryService:
    """Pod B's recovery, announcing through a real `RunEnding` into the push pipeline."""
    graph = build_graph().compile(checkpointer=InMemorySaver())
    ending = RunEnding(settings=Settings(data_root=tmp_path), graph=graph,
                       driver=RunDriver(graph, None, rig.client, Metrics()),  # type: ignore[arg-type]
                       runs=runs, kotlin=rig.client, metrics=Metrics(), pod_id="pod-b", forget=lambda _: None)
    lock = OrchestrationLock(db[lock_module.COLLECTION_NAME], pod_id="pod-b", slots=1)
    return RecoveryService(runs=runs, admission=Admission(lock, slots=1), adopter=Announcer(ending),
                           interval_seconds=1, **options)


async def _ended_unannounced(runs: RunStore, *, status: str, **fields: Any) -> None:
    """What a kill -9 right after the fenced outcome write leaves behind."""
    assert await runs.upsert(THREAD, task_id="T-1", client_id="C-1", pod_id="dead-pod", if_fence="s0#1",
                             status=status, announced=False, **fields)


async def test_recovery_announces_an_outcome_a_crash_left_unannounced_once(
        http: httpx.AsyncClient, kotlin: FakeKotlinServer, mongo_db: Any, tmp_path: Any) -> None:
    clock = FakeClock(time.time())
    runs = RunStore(mongo_db[runs_module.COLLECTION_NAME], clock=clock)
    await runs.setup()
    await _ended_unannounced(runs, status="done", summary="Hotovo.", branch="task/T-1", artifacts=["a.py"])
    async with push_rig(http, kotlin.url, mongo_db) as rig:
        recovery = _recovery(rig, runs, mongo_db, tmp_path, clock=clock, announce_grace_seconds=10)

        assert await recovery.announce_lost() == []  # within the grace: the pod may be announcing now
        clock.now += 11
        assert await recovery.announce_lost() == [THREAD]
        assert await recovery.announce_lost() == []  # marked announced: not again
        await rig.flush()

    assert [(s["status"], s["summary"], s["branch"], s["artifacts"]) for s in kotlin.statuses] == [
        ("done", "Hotovo.", "task/T-1", ["a.py"])]
    assert kotlin.accepted_keys(STATUS_PATH) == [f"status:{THREAD}:done"]
    record = await runs.get(THREAD)
    assert record is not None and record.announced is True


async def test_an_interrupted_run_is_announced_with_its_interrupt_identity(
        http: httpx.AsyncClient, kotlin: FakeKotlinServer, mongo_db: Any, tmp_path: Any) -> None:
    clock = FakeClock(time.time() + 60)  # everything already older than the grace
    runs = RunStore(mongo_db[runs_module.COLLECTION_NAME])
    await runs.setup()
    await _ended_unannounced(runs, status="interrupted", interrupt_id="int-7", interrupt_action="commit",
                             interrupt_description="Commitnout?")
    # A running run and announced runs are never announced again.
    await runs.upsert("thread-T-2-0123abcd", task_id="T-2", client_id="C-1", status="running", announced=False)
    await runs.upsert("thread-T-3-0123abcd", task_id="T-3", client_id="C-1", status="error", error="x")
    async with push_rig(http, kotlin.url, mongo_db) as rig:
        recovery = _recovery(rig, runs, mongo_db, tmp_path, clock=clock)
        assert await recovery.announce_lost() == [THREAD]
        await rig.flush()

    assert [(s["status"], s["interruptAction"]) for s in kotlin.statuses] == [("interrupted", "commit")]
    assert kotlin.accepted_keys(STATUS_PATH) == [f"status:{THREAD}:interrupted:int-7"]


async def test_a_run_whose_status_is_in_the_outbox_is_marked_not_announced_again(
        http: httpx.AsyncClient, kotlin: FakeKotlinServer, mongo_db: Any, tmp_path: Any) -> None:
    """A normal end leaves the record `announced: false` (no write on the run's path); the sweep
    finds the push in the outbox, marks the record and pushes nothing."""
    clock = FakeClock(time.time() + 60)
    runs = RunStore(mongo_db[runs_module.COLLECTION_NAME])
    await runs.setup()
    await _ended_unannounced(runs, status="done", summary="Hotovo.")
    async with push_rig(http, kotlin.url, mongo_db) as rig:
        record = await runs.get(THREAD)
        assert record is not None
        await rig.client.push_status(StatusPush(task_id="T-1", client_id="C-1", thread_id=THREAD, status="done",
                                                summary="Hotovo."))
        await rig.flush()
        recovery = _recovery(rig, runs, mongo_db, tmp_path, clock=clock)
        assert await recovery.announce_lost() == []
        await rig.flush()

    assert [s["status"] for s in kotlin.statuses] == ["done"]  # the run's own push only
    record = await runs.get(THREAD)
    assert record is not None and record.announced is True
