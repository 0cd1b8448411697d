"""Crash recovery: runs left `running` by a pod that is gone are continued from their checkpoint.

It also announces ended runs whose status push a crash lost (the outcome is recorded first with
`announced: false`, then pushed; each round marks the ended runs whose push is in the outbox and
announces the others).

An owned service: `start()` frees the lock slots an earlier life of this pod left behind and
adopts at once (a restarted pod with a stable id takes its own runs back without waiting for
its old slots to go stale), then looks again every `interval_seconds` until `stop()`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol

from app.persistence.runs import RunRecord, RunStore
from app.runs.admission import Admission, Slot
from app.runs.errors import RunBusyError

log = logging.getLogger(__name__)


class Adopter(Protocol):
    """Who runs an adopted run (the run manager)."""

    def runs_here(self, thread_id: str) -> bool: ...

    async def adopt(self, record: RunRecord, slot: Slot) -> bool:
        """Continue a claimed run under `slot` (which it then owns); False when it could not."""
        ...

    async def unannounced(self, records: list[RunRecord]) -> list[RunRecord]:
        """Of these ended runs, those whose status push is not in the outbox; marks the others."""
        ...

    async def reannounce(self, record: RunRecord) -> None:
        """Push the status of an ended run whose announcement was lost, and mark it announced."""
        ...


class RecoveryService:
    def __init__(self, *, runs: RunStore, admission: Admission, adopter: Adopter, interval_seconds: float,
                 announce_grace_seconds: float = 10.0, clock: Callable[[], float] = time.time) -> None:
        self._runs = runs
        self._announce_grace = announce_grace_seconds
        self._clock = clock
        self._admission = admission
        self._adopter = adopter
        self._interval = interval_seconds
        self._task: asyncio.Task[None] | None = None

    async def start(self, *, loops: int | None = None) -> None:
        """Free this pod's stale slots, then adopt in the background: now, and every interval
        (`loops` rounds, or until `stop()`)."""
        await self._admission.free_own_stale()
        self._task = asyncio.create_task(self._run(loops), name="run-recovery")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self, loops: int | None) -> None:
        done = 0
        while loops is None or done < loops:
            try:
                await self.recover_once()
                await self.announce_lost()
            except Exception:
                log.exception("run recovery failed; trying again later")
            done += 1
            if loops is None or done < loops:
                await asyncio.sleep(self._interval)

    async def recover_once(self) -> list[str]:
        """Adopt every orphaned run a free slot allows; the thread ids adopted.

        A run is an orphan when no live lock slot holds it (its pod died or shut down) or when
        it belongs to this pod but does not run here (we restarted). Claiming is atomic, so
        several pods never adopt the same run; the claim stores the new slot's fencing token.
        """
        adopted: list[str] = []
        me = self._admission.pod_id
        for record in await self._runs.list_by_status("running"):
            thread_id = record.thread_id
            if self._adopter.runs_here(thread_id) or (record.pod_id != me and await self._admission.holder(thread_id)):
                continue
            try:
                slot = await self._admission.admit(thread_id)
            except RunBusyError:
                break  # no free slot now; the next round tries again
            try:
                claimed = await self._runs.claim(thread_id, from_pod=record.pod_id, to_pod=me, fence=slot.token)
                if claimed:
                    log.warning("adopting orphaned run %s (was on pod %s)", thread_id, record.pod_id)
                    claimed = await self._adopter.adopt(record, slot)
            except BaseException:
                await slot.release()
                raise
            if claimed:
                adopted.append(thread_id)
            else:
                await slot.release()
        return adopted

    async def announce_lost(self) -> list[str]:
        """Announce every ended run a crash left unannounced for longer than the grace (a pod
        announcing right now is not overtaken); the thread ids announced. Any pod may do it: the
        status push's outbox identity makes a repeat from two pods one delivery."""
        ended = [record for record in
                 await self._runs.list_unannounced(updated_before=self._clock() - self._announce_grace)
                 if not self._adopter.runs_here(record.thread_id)]
        announced = []
        for record in await self._adopter.unannounced(ended) if ended else []:
            await self._adopter.reannounce(record)
            announced.append(record.thread_id)
        return announced
