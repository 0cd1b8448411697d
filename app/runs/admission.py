"""Admission: whether a run may execute now, on this pod and in the cluster.

Two gates: this pod's `asyncio.Semaphore` and the cluster-wide MongoDB lock, so N pods never run
more than `max_concurrent_orchestrations`. Either one full is `RunBusyError` (HTTP 429). A run
holds both while it executes, as one `Slot` whose release (lock first, then the semaphore) is
written here once and is idempotent.
"""

from __future__ import annotations

import asyncio
import logging

from app.persistence.lock import LockLease, OrchestrationLock
from app.runs.errors import RunBusyError

log = logging.getLogger(__name__)

BUSY_MESSAGE = "Orchestrator busy – another orchestration is running"


class Slot:
    """Both gates held for one run: the pod's semaphore and a lock lease (its fencing token)."""

    def __init__(self, lease: LockLease, semaphore: asyncio.Semaphore) -> None:
        self.lease = lease
        self._semaphore = semaphore
        self._released = False

    @property
    def token(self) -> str:
        return self.lease.token

    def holds(self) -> bool:
        """Whether the run may still act where MongoDB cannot be asked: the slot is not released
        and its lease neither lost nor past its heartbeat deadline."""
        return not self._released and self.lease.holds()

    async def release(self) -> None:
        """Free the lock slot, then the semaphore; idempotent. Never raises on a database error
        (the lock slot then goes stale), and the semaphore is freed even when cancelled."""
        if self._released:
            return
        self._released = True
        try:
            await self.lease.release()
        finally:
            self._semaphore.release()


class Admission:
    def __init__(self, lock: OrchestrationLock, *, slots: int) -> None:
        self._lock = lock
        self._semaphore = asyncio.Semaphore(slots)
        self._accepting = True

    @property
    def pod_id(self) -> str:
        return self._lock.pod_id

    @property
    def busy(self) -> bool:
        """Every slot of this pod is taken (the cluster may be full before that)."""
        return self._semaphore.locked()

    @property
    def accepting(self) -> bool:
        """False once shutdown began: the pod is no longer ready for work."""
        return self._accepting

    def stop_accepting(self) -> None:
        self._accepting = False

    async def admit(self, thread_id: str) -> Slot:
        """Both gates for `thread_id` at once, or `RunBusyError` with nothing held."""
        if not self._accepting or self._semaphore.locked():
            raise RunBusyError(BUSY_MESSAGE)
        await self._semaphore.acquire()  # immediate: checked above, no await in between
        try:
            lease = await self._lock.acquire(thread_id)
        except BaseException:
            self._semaphore.release()
            raise
        if lease is None:
            self._semaphore.release()
            raise RunBusyError(BUSY_MESSAGE)
        return Slot(lease, self._semaphore)

    async def request_cancel(self, thread_id: str) -> bool:
        """Ask the pod running `thread_id` (any pod) to cancel it, through its lock slot."""
        return await self._lock.request_cancel(thread_id)

    async def holder(self, thread_id: str) -> bool:
        """Whether a live lock slot (on any pod) holds `thread_id`."""
        return await self._lock.holder(thread_id) is not None

    async def free_own_stale(self) -> int:
        """Free the lock slots an earlier life of this pod id left (called at start-up, when no
        run of ours can be alive here); with a stable pod id that is what a crash left behind."""
        return await self._lock.release_pod()
