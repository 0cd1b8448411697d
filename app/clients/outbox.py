"""Writes pushes into the MongoDB outbox in the order they were produced.

`put` returns once the push is stored (so what a run reported survives a kill -9 right after),
`put_nowait` serves the two producers that are synchronous callbacks (the budget warning and the
correction heartbeat while a model streams). One owned task does every write, in production order,
so a status is never stored, and therefore never sent, ahead of the progress produced before it.

MongoDB briefly unreachable must not lose a push: the write is retried with backoff while the
pushes wait in a bounded in-memory queue, and `put` stops waiting for the write (a run does not
stall on its heartbeats). When the queue is full the oldest progress push goes first (a heartbeat),
then the oldest push of any kind, each logged and counted as given up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from app.observability.metrics import Metrics
from app.persistence.mongo import is_unreachable
from app.persistence.outbox import OutboxItem, OutboxStore
from app.runtime.backoff import capped_delay

log = logging.getLogger(__name__)


def _ignore(_: OutboxItem) -> None:
    return None


@dataclass(eq=False)  # compared by identity: two entries are never the same push
class _Entry:
    item: OutboxItem
    written: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class OutboxWriter:
    def __init__(
        self,
        store: OutboxStore,
        *,
        on_stored: Callable[[OutboxItem], None] = _ignore,
        status_expiry_seconds: float = 86_400.0,
        progress_expiry_seconds: float = 900.0,
        capacity: int = 1000,
        write_timeout: float = 5.0,
        retry_base_seconds: float = 0.5,
        retry_max_seconds: float = 10.0,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._on_stored = on_stored
        self._expiry = {"status": status_expiry_seconds, "progress": progress_expiry_seconds}
        self._capacity = max(2, capacity)
        self._write_timeout = write_timeout
        self._retry_base = retry_base_seconds
        self._retry_max = retry_max_seconds
        self._metrics = metrics or Metrics()
        self._clock = clock
        self._queue: deque[_Entry] = deque()
        self._ready = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._failing = False
        self._last_seq = 0
        self._task: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        """Pushes produced but not yet stored (MongoDB refusing writes, or a write in flight)."""
        return len(self._queue)

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._write_forever(), name="outbox-writer")

    async def stop(self, drain_seconds: float = 5.0) -> None:
        """Store what is queued (bounded), then stop; what could not be stored is logged as lost."""
        with contextlib.suppress(TimeoutError):
            await self.flush(drain_seconds)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        while self._queue:
            self._give_up(self._queue.popleft(), "the service stopped before MongoDB took it")

    async def flush(self, timeout: float) -> None:
        """Wait until every push produced so far is stored."""
        await asyncio.wait_for(self._idle.wait(), timeout)

    async def put(self, item: OutboxItem) -> None:
        """Store the push; while MongoDB refuses writes it waits in memory and this returns at once."""
        entry = self._enqueue(item)
        if self._failing or self._task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(entry.written), self._write_timeout)
        except TimeoutError:
            log.warning("outbox write of %s takes over %.1f s; the push waits in memory", entry.item.key,
                        self._write_timeout)

    async def stored(self, item_ids: list[str]) -> set[str]:
        """Which of these push identities MongoDB holds (stored by any pod, at any time)."""
        return await self._store.existing(item_ids)

    def put_nowait(self, item: OutboxItem) -> None:
        """Queue the push for the writer (for synchronous callbacks); stored within milliseconds."""
        self._enqueue(item)

    def _enqueue(self, item: OutboxItem) -> _Entry:
        now = self._clock()
        self._last_seq = max(int(now * 1e9), self._last_seq + 1)
        seq = self._last_seq
        entry = _Entry(item.model_copy(update={
            "seq": seq, "key": item.id if item.kind == "status" else f"{item.id}:{seq}",
            "created_at": now, "due_at": now, "expires_at": now + self._expiry[item.kind],
        }))
        if len(self._queue) >= self._capacity:
            # The head may be in the middle of its write: the victim is chosen among the others.
            candidates = list(self._queue)[1:]
            victim = next((e for e in candidates if e.item.kind == "progress"), candidates[0])
            self._queue.remove(victim)
            self._give_up(victim, f"the in-memory outbox is full ({self._capacity})")
        self._queue.append(entry)
        self._idle.clear()
        self._ready.set()
        return entry

    def _give_up(self, entry: _Entry, why: str) -> None:
        log.error("push %s to %s lost: %s", entry.item.key, entry.item.path, why)
        self._metrics.push_failed(entry.item.path)
        if not entry.written.done():
            entry.written.set_result(None)

    async def _write_forever(self) -> None:
        failures = 0
        while True:
            await self._ready.wait()
            while self._queue:
                entry = self._queue[0]
                try:
                    stored = await self._store.add(entry.item)
                except Exception as exc:
                    if not is_unreachable(exc):
                        # Not transient (e.g. a body MongoDB cannot store): retrying cannot help.
                        log.exception("outbox write of %s failed", entry.item.key)
                        self._remove(entry)
                        self._give_up(entry, "MongoDB rejected it")
                        continue
                    failures += 1
                    if not self._failing:
                        log.warning("MongoDB refused an outbox write (%s): %d push(es) kept in memory, retrying",
                                    exc, len(self._queue))
                    self._failing = True
                    await asyncio.sleep(capped_delay(failures, self._retry_base, self._retry_max))
                    continue
                if self._failing:
                    log.warning("outbox writes work again after %d failed attempt(s)", failures)
                self._failing, failures = False, 0
                self._remove(entry)
                if stored:
                    self._on_stored(entry.item)
                else:
                    log.info("status push %s is already in the outbox: not stored or sent twice", entry.item.key)
                if not entry.written.done():
                    entry.written.set_result(None)
            self._ready.clear()
            self._idle.set()

    def _remove(self, entry: _Entry) -> None:
        with contextlib.suppress(ValueError):  # dropped meanwhile by a full queue
            self._queue.remove(entry)
