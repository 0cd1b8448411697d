"""Distributed orchestration lock (spec §14.2): N slots shared by all orchestrator pods.

The GPU behind the local LLM serves one request well at a time, so the number of concurrent
orchestrations is capped across *all* pods, not per process. Each slot is one document in
``orchestrator_locks``; a pod takes a free (or stale) slot with a single atomic
``find_one_and_update`` and keeps it alive with a heartbeat. A pod that dies without releasing
loses the slot after ``stale_seconds`` to whoever acquires next.

Slot ids are ``orchestration_slot_<i>`` for every i, also when N=1 (the spec's single
``orchestration_slot`` document is not used): uniform ids keep one code path, and a changed N
only adds or ignores documents. Times are epoch floats from ``clock`` (pods' clocks must agree
to well within ``stale_seconds``), which also keeps them exact on nx-27017.

Fencing: every acquire increments the slot's ``fence`` counter, and the lease carries the pair
as its ``token``. The run manager stores the token on the run record when it takes a run and
makes its outcome write conditional on it, so a pod whose slot was taken over cannot overwrite
the new owner's run. A pod also gives up a lease by itself when no heartbeat succeeded for
``stale_seconds`` minus a margin (two heartbeats, at most half the stale time): it stops before
another pod may take the slot over, even when MongoDB is unreachable and it cannot be told.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import BulkWriteError, PyMongoError

logger = logging.getLogger(__name__)

COLLECTION_NAME = "orchestrator_locks"
SLOT_PREFIX = "orchestration_slot_"
_DUPLICATE_KEY = 11000

Document = dict[str, Any]


def slot_id(index: int) -> str:
    return f"{SLOT_PREFIX}{index}"


def lost_after(heartbeat_seconds: float, stale_seconds: float) -> float:
    """How long a lease survives without a successful heartbeat: the stale time minus a margin of
    two heartbeats (at most half the stale time) for clock skew and the last write's latency."""
    return stale_seconds - min(2 * heartbeat_seconds, stale_seconds / 2)


class LockLease:
    """A held slot. Heartbeats until released; ``lost`` is set when another pod took the slot
    over, or when heartbeats keep failing past ``lost_after_seconds`` after the last success
    (counted locally, so a pod cut off from MongoDB notices too; the last attempt may end one
    heartbeat later).

    Work running under a lease should watch ``lost`` and stop: after a takeover two pods would
    otherwise run orchestrations on a one-slot GPU. ``token`` fences its writes (module doc).
    """

    def __init__(
        self,
        collection: AsyncCollection[Document],
        *,
        slot_id: str,
        thread_id: str,
        pod_id: str,
        heartbeat_seconds: float,
        clock: Callable[[], float],
        fence: int = 0,
        lost_after_seconds: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.slot_id = slot_id
        self.thread_id = thread_id
        self.pod_id = pod_id
        self.fence = fence
        self.lost = asyncio.Event()
        self.cancel_requested = asyncio.Event()
        """Set when a heartbeat finds the slot marked for cancel (`OrchestrationLock.request_cancel`:
        a /cancel that reached another pod)."""
        self._collection = collection
        self._heartbeat_seconds = heartbeat_seconds
        self._clock = clock
        self._monotonic = monotonic
        self._lost_after = lost_after_seconds
        self._deadline = monotonic() + lost_after_seconds if lost_after_seconds is not None else None
        self._released = False
        self._heartbeat = asyncio.create_task(
            self._heartbeat_loop(), name=f"lock-heartbeat:{slot_id}:{thread_id}"
        )

    @property
    def token(self) -> str:
        """The fencing token: unique per acquire (the slot and its acquire counter)."""
        return f"{self.slot_id}#{self.fence}"

    def holds(self) -> bool:
        """Whether this pod may still act under the lease when it cannot ask MongoDB: not lost,
        and no heartbeat failed past the deadline (checked here too, in case the heartbeat task lags)."""
        if self.lost.is_set():
            return False
        return self._deadline is None or self._monotonic() < self._deadline

    @property
    def _owner_filter(self) -> Document:
        owner = {"_id": self.slot_id, "locked_by": self.pod_id, "thread_id": self.thread_id}
        return owner | {"fence": self.fence} if self.fence else owner

    def _lose(self, why: str) -> None:
        logger.error("lock slot %s for thread %s: %s; lease lost", self.slot_id, self.thread_id, why)
        self.lost.set()

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(max(0.0, min(self._heartbeat_seconds, self._remaining())))
            sent = self._monotonic()
            # A write may take until the deadline, or one heartbeat once that has passed: a late
            # heartbeat that still matches proves the slot is ours (a take-over changes its
            # owner and fence), so a pod whose loop was merely slow keeps its lease.
            limit = None if self._deadline is None else max(self._remaining(), self._heartbeat_seconds)
            try:
                async with asyncio.timeout(limit):
                    found = await self._collection.find_one_and_update(
                        self._owner_filter, {"$set": {"locked_at": self._clock()}}, projection={"cancel": 1}
                    )
            except (PyMongoError, TimeoutError):
                if self._remaining() <= 0:
                    self._lose(f"no successful heartbeat for {self._lost_after:g} s")
                    return
                # A blip is survivable: the deadline decides when it is not.
                logger.warning("lock heartbeat for %s failed; retrying", self.slot_id, exc_info=True)
                continue
            if found is None:
                self._lose("taken over by another pod")
                return
            if found.get("cancel"):
                self.cancel_requested.set()
            if self._lost_after is not None:
                self._deadline = sent + self._lost_after

    def _remaining(self) -> float:
        return float("inf") if self._deadline is None else self._deadline - self._monotonic()

    async def release(self) -> None:
        """Stop the heartbeat and free the slot if it is still ours. Idempotent, never raises
        on a database error (the slot then frees itself by going stale)."""
        if self._released:
            return
        self._released = True
        self._heartbeat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._heartbeat
        if self.lost.is_set():
            return
        try:
            await self._collection.update_one(
                self._owner_filter,
                {"$set": {"locked_by": None, "thread_id": None, "locked_at": self._clock()}},
            )
        except PyMongoError:
            logger.warning("lock release of %s failed; it will go stale", self.slot_id, exc_info=True)

    async def __aenter__(self) -> LockLease:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.release()


class OrchestrationLock:
    """Cluster-wide cap of ``slots`` concurrent orchestrations."""

    def __init__(
        self,
        collection: AsyncCollection[Document],
        *,
        pod_id: str,
        slots: int,
        heartbeat_seconds: float = 10.0,
        stale_seconds: float = 300.0,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if slots < 1:
            raise ValueError("slots must be >= 1")
        if heartbeat_seconds >= stale_seconds:
            raise ValueError("heartbeat_seconds must be shorter than stale_seconds")
        self._collection = collection
        self.pod_id = pod_id
        self.slot_ids = [slot_id(i) for i in range(slots)]
        self._heartbeat_seconds = heartbeat_seconds
        self._stale_seconds = stale_seconds
        self._clock = clock
        self._monotonic = monotonic
        self._ready = False

    async def setup(self) -> None:
        """Create the missing slot documents. Duplicate-key errors mean another pod (or an earlier
        start) created them, so several pods may run this at once."""
        free = [{"_id": sid, "locked_by": None, "thread_id": None, "locked_at": 0.0} for sid in self.slot_ids]
        try:
            await self._collection.insert_many(free, ordered=False)
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors", [])
            if any(error.get("code") != _DUPLICATE_KEY for error in errors):
                raise
        self._ready = True

    async def acquire(self, thread_id: str) -> LockLease | None:
        """Take a free or stale slot for ``thread_id`` in one round trip; None when all are busy.
        The slot's fence counter goes up by one, so the lease's token is new.

        Does not check whether ``thread_id`` already holds a slot (that would cost a second round
        trip); callers that may see duplicate requests check :meth:`holder` first.
        """
        if not self._ready:
            await self.setup()
        now = self._clock()
        started = self._monotonic()
        previous = await self._collection.find_one_and_update(
            {
                "_id": {"$in": self.slot_ids},
                "$or": [{"locked_by": None}, {"locked_at": {"$lt": now - self._stale_seconds}}],
            },
            {"$set": {"locked_by": self.pod_id, "thread_id": thread_id, "locked_at": now, "cancel": False},
             "$inc": {"fence": 1}},
            sort=[("_id", 1)],
            return_document=ReturnDocument.BEFORE,
        )
        if previous is None:
            return None
        if previous.get("locked_by") is not None:
            logger.warning(
                "took over stale lock slot %s from pod %s (thread %s, silent for %.0fs) for thread %s",
                previous["_id"],
                previous["locked_by"],
                previous.get("thread_id"),
                now - float(previous.get("locked_at") or 0.0),
                thread_id,
            )
        return LockLease(
            self._collection,
            slot_id=previous["_id"],
            thread_id=thread_id,
            pod_id=self.pod_id,
            heartbeat_seconds=self._heartbeat_seconds,
            clock=self._clock,
            fence=int(previous.get("fence") or 0) + 1,  # $inc is atomic with the take-over
            lost_after_seconds=lost_after(self._heartbeat_seconds, self._stale_seconds) - (self._monotonic() - started),
            monotonic=self._monotonic,
        )

    async def holder(self, thread_id: str) -> Document | None:
        """The live (not stale) slot document held for ``thread_id``, if any, on any pod."""
        return await self._collection.find_one(
            {
                "_id": {"$in": self.slot_ids},
                "thread_id": thread_id,
                "locked_by": {"$ne": None},
                "locked_at": {"$gte": self._clock() - self._stale_seconds},
            }
        )

    async def request_cancel(self, thread_id: str) -> bool:
        """Mark the live slot held for ``thread_id`` (on any pod) for cancel: its holder's next
        heartbeat sees it and cancels the run. False when no live slot holds it."""
        result = await self._collection.update_one(
            {"_id": {"$in": self.slot_ids}, "thread_id": thread_id, "locked_by": {"$ne": None},
             "locked_at": {"$gte": self._clock() - self._stale_seconds}},
            {"$set": {"cancel": True}},
        )
        return result.matched_count > 0

    async def release_pod(self) -> int:
        """Free every slot this pod id still holds: called at start-up, when no run of ours can
        be alive (a restarted container keeps its pod id). Returns how many were freed."""
        result = await self._collection.update_many(
            {"_id": {"$in": self.slot_ids}, "locked_by": self.pod_id},
            {"$set": {"locked_by": None, "thread_id": None}},
        )
        if result.modified_count:
            logger.warning("released %d orchestration slot(s) left by an earlier life of pod %s",
                           result.modified_count, self.pod_id)
        return result.modified_count

    async def slots_state(self) -> list[Document]:
        """One entry per configured slot, in slot order, for /health:
        ``{slot_id, locked_by, thread_id, locked_at, stale}``."""
        now = self._clock()
        docs = {doc["_id"]: doc async for doc in self._collection.find({"_id": {"$in": self.slot_ids}})}
        state = []
        for sid in self.slot_ids:
            doc = docs.get(sid, {})
            locked_by = doc.get("locked_by")
            locked_at = float(doc.get("locked_at") or 0.0)
            state.append(
                {
                    "slot_id": sid,
                    "locked_by": locked_by,
                    "thread_id": doc.get("thread_id"),
                    "locked_at": locked_at,
                    "stale": locked_by is not None and locked_at < now - self._stale_seconds,
                }
            )
        return state
