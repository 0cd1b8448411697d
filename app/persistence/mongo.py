"""MongoDB client factory: one place that fixes the client options the whole service relies on."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pymongo import AsyncMongoClient, MongoClient
from pymongo.errors import ConnectionFailure

APP_NAME = "jervis-orchestrator"


@dataclass(frozen=True)
class MongoTimeouts:
    """Client timeouts (`MONGODB_TIMEOUT_SECONDS`, `MONGODB_SOCKET_TIMEOUT_SECONDS`).

    pymongo waits 30 s for a server and forever for a reply by default: an outage would then
    stall a checkpoint write for half a minute, and a partition without a reset for ever.
    """

    connect_seconds: float = 5.0
    """Server selection and connect: an unreachable MongoDB fails an operation this fast."""
    socket_seconds: float | None = 60.0
    """A reply that takes longer fails the operation (none of ours comes near it)."""

    def options(self) -> dict[str, Any]:
        ms = int(self.connect_seconds * 1000)
        return {"serverSelectionTimeoutMS": ms, "connectTimeoutMS": ms,
                "socketTimeoutMS": int(self.socket_seconds * 1000) if self.socket_seconds else None}


def create_client(url: str, *, timeouts: MongoTimeouts = MongoTimeouts()) -> AsyncMongoClient[dict[str, Any]]:
    """Async client with tz-aware datetimes (stored times compare with ``datetime.now(UTC)``).
    Creating the client does no I/O."""
    return AsyncMongoClient(url, tz_aware=True, appname=APP_NAME, **timeouts.options())


def create_sync_client(url: str, *, timeouts: MongoTimeouts = MongoTimeouts()) -> MongoClient[dict[str, Any]]:
    """The checkpointer's client (MongoDBSaver takes only a sync one), with the same timeouts so a
    checkpoint write fails as fast as any other operation when MongoDB is away."""
    return MongoClient(url, appname=APP_NAME, **timeouts.options())


def is_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) says MongoDB cannot be reached right now:
    the ConnectionFailure family (ServerSelectionTimeoutError, AutoReconnect, NetworkTimeout,
    NotPrimaryError, WaitQueueTimeoutError). Such a failure passes; the operation is worth
    repeating once MongoDB answers. Other errors (a duplicate key, a document too large) are not."""
    seen: BaseException | None = exc
    for _ in range(5):  # the `raise … from` chain, bounded
        if seen is None:
            return False
        if isinstance(seen, ConnectionFailure):
            return True
        seen = seen.__cause__
    return False


async def ping(client: AsyncMongoClient[Any]) -> float:
    """Round-trip a ``ping`` and return its latency in seconds; raises PyMongoError on failure."""
    started = time.perf_counter()
    await client.admin.command("ping")
    return time.perf_counter() - started
