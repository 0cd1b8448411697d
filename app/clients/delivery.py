"""Delivery of the outbox to Kotlin: at least once, in order per task, until acknowledged or expired.

A push just stored by this pod is handed over in memory (`notify`) and sent at once by the worker
of its task, so a healthy Kotlin sees every push with no polling delay. Whatever that fast path
cannot deliver stays in MongoDB and is picked up by the poll: per task only the oldest pending
push is eligible, claimed with a lease (two pods never send it at the same time), sent, and
acknowledged, or rescheduled with exponential backoff and jitter. A task with anything left in
MongoDB (a failed attempt, a push of an earlier life of this process or of a dead pod) takes the
poll path until it is empty, so its pushes keep their order.

A delivered progress push is not deleted at once: its task's document is overwritten by the
next node's push anyway, so the delete waits `ACK_SECONDS` (well inside the lease) and is
skipped when a newer push of the task came meanwhile; a run's nodes cost one outbox write each,
and the task's last progress is deleted once, after its status. A crash inside that quarter of a
second sends the delivered heartbeat again after the restart (at least once: Kotlin's heartbeat
is refreshed and the node listed once more).

Any answer below 500 acknowledges a push: Kotlin answers 200 before processing and 500 when it
cannot decode a body, and a 4xx would not improve with a retry (it is logged). Every request
carries the push's identity as the `Idempotency-Key` header.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable

import httpx
from pymongo.errors import PyMongoError

from app.observability.logs import run_context
from app.observability.metrics import Metrics
from app.persistence.outbox import OutboxItem, OutboxStore
from app.runtime.backoff import capped_delay

log = logging.getLogger(__name__)

IDEMPOTENCY_HEADER = "Idempotency-Key"
#: How long a delivered progress push's document is kept for the next node's push to overwrite
#: (bookkeeping nodes follow each other within milliseconds); also a crash's window to send it twice.
ACK_SECONDS = 0.25
#: Pushes of one task held in memory at most; beyond that the task takes the poll path.
_MEMORY_PER_TASK = 100


class DeliveryService:
    def __init__(
        self,
        store: OutboxStore,
        http: httpx.AsyncClient,
        base_url: str,
        *,
        push_timeout: float = 5.0,
        retry_base_seconds: float = 1.0,
        retry_max_seconds: float = 60.0,
        poll_seconds: float = 5.0,
        max_sending: int = 16,
        scan_limit: int = 500,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self._store = store
        self._http = http
        self._base = base_url.rstrip("/")
        self._push_timeout = push_timeout
        self._retry_base = retry_base_seconds
        self._retry_max = retry_max_seconds
        self._poll_seconds = poll_seconds
        self._sending = asyncio.Semaphore(max_sending)
        self._scan_limit = scan_limit
        self._metrics = metrics or Metrics()
        self._clock = clock
        self._jitter = jitter
        self._queues: dict[str, deque[OutboxItem]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._polled: set[str] = set()
        """Order keys that have pushes in MongoDB beyond the fast path: they go through the poll."""
        self._acks: dict[str, tuple[OutboxItem, float]] = {}
        """Per order key, the delivered progress push whose document is still stored, and when its
        delete falls due."""
        self._ack_seconds = min(ACK_SECONDS, store.lease_seconds / 4)
        self._ack_wake = asyncio.Event()
        self._acker: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._stopping = False

    def backoff(self, attempts: int) -> float:
        """Delay after the `attempts`-th failed attempt: doubling from the base up to the cap, then
        between half and all of it at random, so pods and tasks do not retry in lockstep."""
        return capped_delay(attempts, self._retry_base, self._retry_max) * (0.5 + 0.5 * self._jitter())

    # --- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Poll at once (pushes left by an earlier life or a dead pod), then on every wake-up and
        at least every `poll_seconds`; delete delivered heartbeats as their delay passes."""
        if self._loop is None:
            self._stopping = False
            self._loop = asyncio.create_task(self._poll_forever(), name="outbox-delivery")
            self._acker = asyncio.create_task(self._ack_forever(), name="outbox-acks")

    async def stop(self, drain_seconds: float = 5.0) -> None:
        """Let the pushes being sent finish (bounded), then stop; the rest stays in MongoDB with its
        lease freed, for the next start or another pod."""
        self._stopping = True
        for task in (self._loop, self._acker):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._loop = self._acker = None
        workers = list(self._workers.values())
        if workers:
            _, unfinished = await asyncio.wait(workers, timeout=drain_seconds)
            for task in unfinished:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
        self._queues.clear()
        try:
            await self._settle_acks(everything=True)
            await self._store.release_leases()
            left = (await self._store.stats()).depth
        except PyMongoError as exc:
            log.warning("could not release the outbox leases at shutdown: %s", exc)
            return
        if left:
            log.info("%d push(es) left in the outbox for the next start or another pod", left)

    # --- fast path ---------------------------------------------------------------------------

    def notify(self, item: OutboxItem) -> None:
        """A push this pod has just stored: send it now unless its task must wait for the poll."""
        key = item.order_key
        if self._stopping or key in self._polled:
            self._wake.set()
            return
        queue = self._queues.setdefault(key, deque())
        if len(queue) >= _MEMORY_PER_TASK:  # Kotlin is slow: the rest waits in MongoDB (it is all there)
            queue.clear()
            self._polled.add(key)
            self._wake.set()
            return
        queue.append(item)
        if key not in self._workers:
            self._workers[key] = asyncio.create_task(self._work(key), name=f"outbox-push:{key}")

    async def _work(self, key: str) -> None:
        """Send the task's queued pushes in order; the first failure hands the task to the poll."""
        try:
            while queue := self._queues.get(key):
                if not await self._deliver(queue.popleft()):
                    self._polled.add(key)
                    break
        finally:
            self._queues.pop(key, None)
            self._workers.pop(key, None)
            if key in self._polled:
                self._wake.set()

    # --- poll path ---------------------------------------------------------------------------

    async def deliver_due(self) -> float | None:
        """One poll round, waiting for the sends it started; returns when the next push falls due
        (None: nothing waits). The background loop and the tests drive the service through it."""
        next_due = await self._round()
        while self._workers:
            await asyncio.gather(*list(self._workers.values()), return_exceptions=True)
        await self._settle_acks(everything=True)
        return next_due

    async def flush(self, timeout: float) -> None:
        """Deliver until the outbox is empty (Kotlin must be answering)."""
        async with asyncio.timeout(timeout):
            while True:
                next_due = await self.deliver_due()
                if (await self._store.stats()).depth == 0:
                    return
                wait = 0.02 if next_due is None else max(0.0, min(next_due - self._clock(), 0.2))
                await asyncio.sleep(wait)

    async def _poll_forever(self) -> None:
        while True:
            self._wake.clear()
            try:
                next_due = await self._round()
            except PyMongoError as exc:
                log.warning("outbox poll failed (MongoDB): %s", exc)
                next_due = None
            except Exception:
                log.exception("outbox poll failed")
                next_due = None
            timeout = self._poll_seconds
            if next_due is not None:
                timeout = min(timeout, max(0.01, next_due - self._clock()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _round(self) -> float | None:
        items = await self._store.scan(self._scan_limit)
        heads: dict[str, OutboxItem] = {}
        waiting: dict[str, int] = {}
        for item in items:
            if self._is_acked(item):
                continue  # delivered by this pod, its delete not yet due: nothing to send
            heads.setdefault(item.order_key, item)
            waiting[item.order_key] = waiting.get(item.order_key, 0) + 1
        # Before any await: a push stored from now on for these tasks must queue behind MongoDB's.
        self._polled.update(key for key in heads if key not in self._workers)
        if len(items) < self._scan_limit:
            self._polled = {key for key in self._polled if key in heads or key in self._workers}
        next_due: float | None = None
        for key, head in heads.items():
            if key in self._workers or self._stopping:
                continue
            now = self._clock()
            if head.kind == "progress" and head.attempts > 0 and waiting[key] > 1:
                # A heartbeat that already failed must not hold back the status queued behind it.
                if await self._store.drop(head):
                    with run_context(thread_id=head.thread_id, task_id=head.task_id):
                        log.info("dropped progress push %s: a later push of its task waits behind it", head.key)
                    self._wake.set()
                continue
            leased = head.lease_until > now and head.lease_owner != self._store.pod_id
            if head.expires_at > now and (head.due_at > now or leased):
                wake_at = max(head.due_at, head.lease_until if leased else 0.0)
                next_due = wake_at if next_due is None else min(next_due, wake_at)
                continue
            claimed = await self._store.claim(head)
            if claimed is None or key in self._workers:
                continue
            self._queues[key] = deque([claimed])
            self._workers[key] = asyncio.create_task(self._work(key), name=f"outbox-push:{key}")
        return next_due

    # --- one push ----------------------------------------------------------------------------

    async def _deliver(self, item: OutboxItem) -> bool:
        """Send one push. True when it is settled (acknowledged or expired), False when the attempt
        failed and the push was rescheduled."""
        with run_context(thread_id=item.thread_id, task_id=item.task_id):
            now = self._clock()
            if item.expires_at <= now:
                log.error("push %s to %s expired undelivered after %d attempt(s)", item.key, item.path,
                          item.attempts)
                self._metrics.push_failed(item.path)
                await self._settle(self._store.expire, item)
                return True
            problem = await self._post(item)
            if problem is None:
                self._metrics.push_delivered(item.path)
                if item.kind == "progress":
                    self._acks[item.order_key] = (item, self._clock() + self._ack_seconds)
                    self._ack_wake.set()
                else:
                    await self._settle(self._store.delivered, item)
                    await self._settle_acks(item.order_key)  # the task's progress before it
                return True
            attempts = item.attempts + 1
            delay = self.backoff(attempts)
            self._metrics.push_attempt_failed(item.path)
            level = logging.WARNING if attempts == 1 or attempts % 10 == 0 else logging.INFO
            log.log(level, "push %s to %s failed (attempt %d): %s; next attempt in %.1f s", item.key, item.path,
                    attempts, problem, delay)
            try:
                await self._store.retry_later(item, due_at=self._clock() + delay, error=problem)
            except PyMongoError as exc:  # the lease runs out and the push is tried again anyway
                log.warning("could not reschedule push %s: %s", item.key, exc)
            return False

    async def _post(self, item: OutboxItem) -> str | None:
        """None when Kotlin acknowledged the push, else why not."""
        try:
            async with self._sending:
                response = await self._http.post(self._base + item.path, json=item.body,
                                                 headers={IDEMPOTENCY_HEADER: item.key}, timeout=self._push_timeout)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
        if response.status_code >= 500:
            return f"HTTP {response.status_code}"
        if response.status_code >= 400:
            log.warning("Kotlin refused push %s to %s with HTTP %s: not retried", item.key, item.path,
                        response.status_code)
        return None

    # --- delivered progress -------------------------------------------------------------------

    def _is_acked(self, item: OutboxItem) -> bool:
        acked = self._acks.get(item.order_key)
        return acked is not None and acked[0].id == item.id and acked[0].seq == item.seq

    def _next_ack(self) -> float | None:
        return min((due for _, due in self._acks.values()), default=None)

    async def _ack_forever(self) -> None:
        """Delete delivered heartbeats as their delay passes (woken by each new one)."""
        while True:
            self._ack_wake.clear()
            try:
                await self._settle_acks()
            except Exception:  # _settle logs MongoDB's refusals; anything else must not end the loop
                log.exception("settling delivered progress pushes failed")
            due = self._next_ack()
            timeout = None if due is None else max(0.01, due - self._clock())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ack_wake.wait(), timeout)

    async def _settle_acks(self, key: str | None = None, *, everything: bool = False) -> None:
        """Delete the documents of delivered progress pushes: the one of `key`, every one whose
        delete is due, or (`everything`) all. A task's worker may have replaced an entry meanwhile;
        the delete names its `seq`, so a newer push's document is never removed."""
        now = self._clock()
        for order_key, (item, due) in list(self._acks.items()):
            if not (order_key == key or everything or (key is None and due <= now)):
                continue
            current = self._acks.get(order_key)
            if current is None or current[0] is not item:
                continue  # settled or replaced by a newer push while an earlier delete was awaited
            del self._acks[order_key]
            await self._settle(self._store.delivered, item)

    async def _settle(self, settle: Callable[[OutboxItem], Awaitable[None]], item: OutboxItem) -> None:
        try:
            await settle(item)
        except PyMongoError as exc:  # sent, but still pending: at-least-once, it may be sent again
            log.warning("could not mark push %s settled: %s", item.key, exc)
