"""The run record of one executing segment, written as the run goes.

Two kinds of write, one at a time and in this order (the record itself is created before the
dispatch's 200): the usage and percent at node boundaries, the outcome last. Usage and percent
are cumulative, so the node-boundary writes coalesce: at most one in flight and one more
waiting, which carries the latest figures; a failed one is made good by the next. They are also
spaced `interval_seconds` apart: nodes that take milliseconds (an advice run ends in a quarter of
a second) would otherwise write the record at every boundary only for the outcome to overwrite
it, and the outcome carries the figures a waiting write would have. A crash therefore loses at
most the usage of the node it interrupted and of the nodes that ended within the interval
before, and an adopting pod continues the budget from the record
(`RunManager._scope`).

The outcome is upserted with the run's identity, so an ended run always has its record; its write
waits out an outage (`MongoOutage`) rather than leaving the run `running` for recovery to repeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from app.persistence.mongo import is_unreachable
from app.persistence.outage import MongoOutage
from app.persistence.runs import RunStore

log = logging.getLogger(__name__)

Figures = Callable[[], tuple[dict[str, Any], float]]
#: How long the end of a segment waits for a node-boundary write still in flight.
FLUSH_SECONDS = 30.0
#: Least time between two node-boundary writes of one run.
INTERVAL_SECONDS = 1.0


class RunJournal:
    def __init__(self, runs: RunStore, *, thread_id: str, task_id: str, client_id: str, pod_id: str,
                 outage: MongoOutage | None = None,
                 flush_seconds: float = FLUSH_SECONDS, interval_seconds: float = INTERVAL_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._runs = runs
        self._thread_id = thread_id
        self._task_id = task_id
        self._client_id = client_id
        self._pod_id = pod_id
        self._outage = outage
        self._flush_seconds = flush_seconds
        self._interval = interval_seconds
        self._clock = clock
        self._figures: Figures | None = None
        self._dirty = False
        self._writing = False
        self._next_write = float("-inf")
        self._hurry = asyncio.Event()
        """Set by `flush`: a write waiting for its interval goes at once."""
        self._writer: asyncio.Task[None] | None = None

    def track(self, figures: Figures) -> None:
        """What node-boundary writes carry: (usage snapshot, percent), read when the write starts."""
        self._figures = figures

    def note(self) -> None:
        """A node ended: write the latest figures soon, without making the run wait for it."""
        self._dirty = True
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._drain(), name=f"run-journal:{self._thread_id}")

    async def _drain(self) -> None:
        while self._dirty:
            delay = self._next_write - self._clock()
            if delay > 0 and not self._hurry.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._hurry.wait(), delay)
            self._dirty = False
            self._writing = True
            try:
                await self._write_figures()
            except Exception as exc:  # the next boundary writes the same figures, and more
                if is_unreachable(exc):
                    log.warning("run record of %s not written: MongoDB unreachable (%s)", self._thread_id,
                                type(exc).__name__)
                else:
                    log.exception("run record of %s not written", self._thread_id)
            finally:
                self._writing = False
                self._next_write = self._clock() + self._interval

    async def _write_figures(self) -> None:
        figures = self._figures() if self._figures is not None else None
        if figures is not None:
            usage, percent = figures
            await self._runs.record_progress(self._thread_id, pod_id=self._pod_id, usage=usage, percent=percent)

    async def flush(self) -> None:
        """Make the writes already asked for, without waiting for their interval (bounded: a
        write that hangs past `flush_seconds` is abandoned; the outcome carries the same figures)."""
        writer = self._writer
        if writer is None or writer.done():
            return
        self._hurry.set()
        try:
            _, pending = await asyncio.wait({writer}, timeout=self._flush_seconds)
        finally:
            self._hurry.clear()
        if pending:
            log.warning("run record write of %s did not finish in %g s; abandoned", self._thread_id,
                        self._flush_seconds)
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)

    async def finish(self, *, if_fence: str | None = None, **fields: Any) -> bool | None:
        """The segment's outcome, after every earlier write; upserted with the run's identity (a
        lost creation is superseded), waiting out a MongoDB outage up to its deadline; with
        ``if_fence`` only while the record still holds that fencing token. True: written; False:
        refused, another pod owns the run; None: MongoDB could not be asked (logged)."""
        writer = self._writer
        if writer is not None and not writer.done() and not self._writing:
            writer.cancel()  # a write still waiting for its interval: the outcome carries its figures
            await asyncio.gather(writer, return_exceptions=True)
        await self.flush()

        async def write() -> bool:
            return await self._runs.upsert(self._thread_id, task_id=self._task_id, client_id=self._client_id,
                                           pod_id=self._pod_id,
                                           if_fence=if_fence, **fields)

        try:
            if self._outage is not None:
                return await self._outage.call(write, f"outcome of {self._thread_id}")
            return await write()
        except Exception:
            log.exception("could not record the outcome of %s", self._thread_id)
            return None
