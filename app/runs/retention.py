"""Checkpoint retention: the checkpoints of runs that ended long ago are deleted.

A run's checkpoints (every step's state, its pending writes, the goals' subgraphs) are what a
restart resumes from and what the console's detail and diff pages read. Once a run is `done` or
`error`, nothing resumes it; kept forever they only grow the store, and on the development
store (nx-27017) they slow every run: it answers each filtered query by scanning the whole
collection (docs/operations.md, "Checkpoint retention"). The run record stays, so `/status`,
`/runs` and a run's summary answer as before; its detail then shows the record only.

An owned service: `start()` sweeps at once and then every `interval_seconds` until `stop()`, which
lets a sweep in progress end (within `STOP_SECONDS`, then cancels it: a pymongo operation
cancelled mid-way was seen to never return). Every pod sweeps; deleting a thread twice is
harmless, and each sweep takes a bounded batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Protocol

from app.persistence.runs import RunStore

log = logging.getLogger(__name__)

#: Threads one sweep deletes at most: a backlog (the first start after an upgrade) goes in batches.
BATCH = 200
#: How long `stop()` lets a sweep in progress finish.
STOP_SECONDS = 10.0


class ThreadDeleter(Protocol):
    """The checkpointer's deletion of a thread (`BaseCheckpointSaver.adelete_thread`)."""

    async def adelete_thread(self, thread_id: str) -> None: ...


class CheckpointRetention:
    def __init__(self, *, runs: RunStore, checkpoints: ThreadDeleter, keep_seconds: float, interval_seconds: float,
                 clock: Callable[[], float] = time.time) -> None:
        self._runs = runs
        self._checkpoints = checkpoints
        self._keep = keep_seconds
        self._interval = interval_seconds
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    async def start(self) -> None:
        self._stopping.clear()
        self._task = asyncio.create_task(self._run(), name="checkpoint-retention")

    async def stop(self) -> None:
        if self._task is None:
            return
        self._stopping.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), STOP_SECONDS)
        except TimeoutError:
            log.warning("checkpoint retention did not stop within %.0f s: cancelled", STOP_SECONDS)
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._task = None

    async def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                await self.sweep_once()
            except Exception:
                log.exception("checkpoint retention failed; trying again in %.0f s", self._interval)
            with contextlib.suppress(TimeoutError):  # the interval, or stop() sooner
                await asyncio.wait_for(self._stopping.wait(), self._interval)

    async def sweep_once(self) -> list[str]:
        """Deletes the checkpoints of runs ended more than `keep_seconds` ago (a batch); their ids."""
        now = self._clock()
        deleted = []
        for thread_id in await self._runs.ended_with_checkpoints(before=now - self._keep, limit=BATCH):
            if self._stopping.is_set():
                break
            await self._checkpoints.adelete_thread(thread_id)
            await self._runs.mark_checkpoints_deleted([thread_id], now)  # one by one: a failure loses nothing
            deleted.append(thread_id)
        if deleted:
            log.info("deleted the checkpoints of %d runs ended more than %.1f h ago", len(deleted), self._keep / 3600)
        return deleted
