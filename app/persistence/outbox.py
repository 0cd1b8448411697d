"""Outbox of pushes to Kotlin (``orchestrator_outbox``): every push is stored here before it is sent.

One document per push identity. A status push is inserted under its identity (a second insert of
the same identity, e.g. a status re-produced by a crash replay, is refused) and, once delivered or
expired, kept as a tombstone until ``purge_at`` so a replay cannot send it again. Progress pushes
share one document per task (``_id`` = ``progress:<task>``) that each push overwrites: a stale
heartbeat is worth nothing, so the outbox costs one small write per node however long Kotlin is
away. Documents of one ``order_key`` (a task or a meeting) are sent in ``seq`` order.

A pod claims a document for ``lease_seconds`` with one atomic ``find_one_and_update`` before
sending it, so two pods never send the same push at once. Every conditional write names the
``seq`` it read: a progress document overwritten meanwhile is not deleted by the ack of its older
version. Times are epoch floats (exact on nx-27017); ``purge_at`` is a datetime for the TTL index
and is written only by inserts. Filters avoid ``$or`` (nx-27017 mis-evaluates it beside other
fields).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field
from pymongo import ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

COLLECTION_NAME = "orchestrator_outbox"

PushKind = Literal["status", "progress"]
Document = dict[str, Any]

PENDING = "pending"
DELIVERED = "delivered"
EXPIRED = "expired"

#: Everything a scan needs to pick the next push of each order key (the body is read by the claim).
_SCAN_FIELDS = {"body": 0}


class OutboxItem(BaseModel):
    """One push as stored. ``id`` names the document (a status identity, or a task's progress slot);
    ``key`` is this push's own identity, sent as the ``Idempotency-Key`` header."""

    id: str
    order_key: str
    kind: PushKind
    path: str
    body: dict[str, Any] = Field(default_factory=dict)
    key: str = ""
    seq: int = 0
    created_at: float = 0.0
    expires_at: float = 0.0
    due_at: float = 0.0
    attempts: int = 0
    lease_owner: str | None = None
    lease_until: float = 0.0
    last_error: str | None = None
    thread_id: str | None = None
    """The run that produced the push (a progress body names only its task), for the log lines."""
    task_id: str | None = None


class OutboxStats(BaseModel):
    depth: int
    oldest_created_at: float | None


class OutboxStore:
    def __init__(self, collection: AsyncCollection[Document], *, pod_id: str, lease_seconds: float = 30.0,
                 clock: Callable[[], float] = time.time) -> None:
        self._collection = collection
        self._pod_id = pod_id
        self._lease_seconds = lease_seconds
        self._clock = clock

    @property
    def pod_id(self) -> str:
        return self._pod_id

    @property
    def lease_seconds(self) -> float:
        return self._lease_seconds

    async def setup(self) -> None:
        """Pending pushes in production order (the delivery scan), a task's pushes, and the TTL of
        tombstones."""
        await self._collection.create_index([("state", 1), ("seq", 1)], name="state_seq")
        await self._collection.create_index([("order_key", 1), ("seq", 1)], name="order_key_seq")
        await self._collection.create_index("purge_at", name="purge_at", expireAfterSeconds=0)

    async def add(self, item: OutboxItem) -> bool:
        """Store a push, leased to this pod (it sends it at once from memory). False when a status
        of the same identity is already stored (pending, delivered or expired)."""
        now = self._clock()
        lease = {"lease_owner": self._pod_id, "lease_until": now + self._lease_seconds}
        if item.kind == "status":
            retention = max(0.0, item.expires_at - item.created_at)
            doc = {"_id": item.id, **item.model_dump(exclude={"id"}), **lease, "state": PENDING,
                   "purge_at": datetime.fromtimestamp(item.expires_at + retention, UTC)}
            try:
                await self._collection.insert_one(doc)
            except DuplicateKeyError:
                return False
            return True
        # A newer heartbeat replaces the older one but inherits its backoff (due_at never moves back).
        await self._collection.update_one(
            {"_id": item.id},
            {"$set": {"order_key": item.order_key, "kind": item.kind, "path": item.path, "body": item.body,
                      "key": item.key, "seq": item.seq, "expires_at": item.expires_at, "state": PENDING,
                      "last_error": None, "thread_id": item.thread_id, "task_id": item.task_id, **lease},
             "$setOnInsert": {"created_at": item.created_at, "attempts": 0},
             "$max": {"due_at": item.due_at}},
            upsert=True,
        )
        return True

    async def scan(self, limit: int) -> list[OutboxItem]:
        """Pending pushes in production order, without their bodies."""
        cursor = self._collection.find({"state": PENDING}, _SCAN_FIELDS).sort([("seq", 1)]).limit(limit)
        return [_item(doc) async for doc in cursor]

    async def claim(self, item: OutboxItem) -> OutboxItem | None:
        """Take the push for ``lease_seconds`` if it is still the version scanned and its lease is
        ours or has run out; None when another pod holds it or it changed."""
        now = self._clock()
        query: Document = {"_id": item.id, "seq": item.seq, "state": PENDING}
        if item.lease_owner == self._pod_id:
            query["lease_owner"] = self._pod_id
        else:
            query["lease_until"] = {"$lte": now}
        doc = await self._collection.find_one_and_update(
            query, {"$set": {"lease_owner": self._pod_id, "lease_until": now + self._lease_seconds}},
            return_document=ReturnDocument.AFTER,
        )
        return _item(doc) if doc is not None else None

    async def delivered(self, item: OutboxItem) -> None:
        await self._settle(item, DELIVERED)

    async def expire(self, item: OutboxItem) -> None:
        await self._settle(item, EXPIRED)

    async def drop(self, item: OutboxItem) -> bool:
        """Remove a progress push a later push of its task made useless; False if it changed."""
        result = await self._collection.delete_one({"_id": item.id, "seq": item.seq, "state": PENDING})
        return result.deleted_count > 0

    async def _settle(self, item: OutboxItem, state: str) -> None:
        """A status keeps a tombstone (its identity stays taken until ``purge_at``); a progress
        document is deleted unless a newer heartbeat has overwritten it meanwhile."""
        query = {"_id": item.id, "seq": item.seq, "state": PENDING}
        if item.kind == "status":
            await self._collection.update_one(query, {"$set": {"state": state, "settled_at": self._clock(),
                                                               "lease_owner": None, "lease_until": 0.0}})
        else:
            await self._collection.delete_one(query)

    async def retry_later(self, item: OutboxItem, *, due_at: float, error: str) -> None:
        """Record a failed attempt and free the lease: the next attempt (any pod) is at ``due_at``."""
        await self._collection.update_one(
            {"_id": item.id, "seq": item.seq, "state": PENDING},
            {"$set": {"due_at": due_at, "last_error": error[:500], "lease_owner": None, "lease_until": 0.0},
             "$inc": {"attempts": 1}},
        )

    async def release_leases(self) -> int:
        """Free this pod's leases (start-up after a crash, shutdown) so any pod can send at once."""
        result = await self._collection.update_many(
            {"state": PENDING, "lease_owner": self._pod_id}, {"$set": {"lease_owner": None, "lease_until": 0.0}}
        )
        return result.modified_count

    async def existing(self, item_ids: list[str]) -> set[str]:
        """Which of these identities are stored (pending, delivered or expired)."""
        if not item_ids:
            return set()
        cursor = self._collection.find({"_id": {"$in": item_ids}}, {"_id": 1})
        return {str(doc["_id"]) async for doc in cursor}

    async def get(self, item_id: str) -> Document | None:
        return await self._collection.find_one({"_id": item_id})

    async def stats(self) -> OutboxStats:
        """Pending pushes and the creation time of the oldest (for `/metrics`)."""
        pipeline: list[Document] = [{"$match": {"state": PENDING}},
                                    {"$group": {"_id": None, "depth": {"$sum": 1}, "oldest": {"$min": "$created_at"}}}]
        groups = [doc async for doc in await self._collection.aggregate(pipeline)]
        if not groups:
            return OutboxStats(depth=0, oldest_created_at=None)
        return OutboxStats(depth=int(groups[0]["depth"]), oldest_created_at=float(groups[0]["oldest"]))


def _item(doc: Document) -> OutboxItem:
    return OutboxItem.model_validate({**doc, "id": doc["_id"]})
