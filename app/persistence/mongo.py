"""MongoDB client factory: one place that fixes the client options the whole service relies on.

Write and read concern are client options (:class:`MongoConcerns`), so every collection the
service uses (lock, run records, outbox, context store) and the checkpointer's collections inherit
them; no store sets its own. The defaults are right for a replica set and work on a single node
and on nx-27017 (which accepts every write and read concern and ignores them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from pymongo import AsyncMongoClient, MongoClient
from pymongo.errors import ConnectionFailure

from app.config import Settings

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


ReadConcernLevel = Literal["local", "majority", "linearizable"]


@dataclass(frozen=True)
class MongoConcerns:
    """Write and read concern of every client (`MONGODB_WRITE_CONCERN`, `MONGODB_READ_CONCERN`);
    they override the same options in the URL.

    ``w: majority`` with the journal: an acknowledged write (a lock take-over, a fenced run
    transition, an outbox claim, a checkpoint) survives the loss of the primary; on a single node
    it waits for that node's journal. No ``wtimeout``: a write that cannot reach a majority fails
    when the socket timeout runs out, as a NetworkTimeout (a ConnectionFailure), which the service
    treats as an outage (wait, resume from the checkpoint) rather than as the run's failure.

    ``majority`` reads never return a write a failover can roll back. The decisions that must not
    race (acquiring a slot, claiming a run or a push, a fenced outcome) are conditional writes on
    the primary, made safe by the majority write concern, so no read needs ``linearizable``; it is
    allowed for operators who want reads to see the newest write after a failover too (a replica
    set's primary only: a standalone MongoDB refuses it, nx-27017 ignores it).
    """

    write: str = "majority"
    """``w``: ``majority`` or a number of members (a standalone accepts only 1 and ``majority``)."""
    read: ReadConcernLevel = "majority"
    journal: bool = True
    """``j``: wait for the on-disk journal (what ``majority`` implies on a replica set anyway)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> MongoConcerns:
        return cls(write=settings.mongodb_write_concern, read=settings.mongodb_read_concern)

    def options(self) -> dict[str, Any]:
        w: int | str = int(self.write) if self.write.isdigit() else self.write
        return {"w": w, "journal": self.journal, "readConcernLevel": self.read}


MAJORITY = MongoConcerns()
"""The defaults: what a client made without settings (a test's, a tool's) gets too."""


def create_client(url: str, *, timeouts: MongoTimeouts = MongoTimeouts(),
                  concerns: MongoConcerns = MAJORITY) -> AsyncMongoClient[dict[str, Any]]:
    """Async client with tz-aware datetimes (stored times compare with ``datetime.now(UTC)``).
    Creating the client does no I/O."""
    return AsyncMongoClient(url, tz_aware=True, appname=APP_NAME, **timeouts.options(), **concerns.options())


def create_sync_client(url: str, *, timeouts: MongoTimeouts = MongoTimeouts(),
                       concerns: MongoConcerns = MAJORITY) -> MongoClient[dict[str, Any]]:
    """The checkpointer's client (MongoDBSaver takes only a sync one and builds its collections from
    it), with the same timeouts so a checkpoint write fails as fast as any other operation when
    MongoDB is away, and the same concerns."""
    return MongoClient(url, appname=APP_NAME, **timeouts.options(), **concerns.options())


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
