"""Console sessions, in MongoDB so that every replica sees the same ones and a sign-out holds on all.

A sign-in creates a random session id (256 bits, the cookie's value). Only its SHA-256 is stored (a
read of the collection yields no usable cookie), with the session's absolute expiry, its last use
and a fingerprint of the `API_TOKEN` it was made with: `HMAC(token, session id)`, which can be
neither replayed nor used to test guesses of the token without the id the store does not hold.

A session is good while it is within its lifetime, used within the idle timeout, and made with
the current token. Sign-out deletes it; a rotated `API_TOKEN` makes every older session's
fingerprint wrong. Such a session is refused but not deleted: during a rolling rotation a pod still
on the old token must not delete the sessions made on the new one (they end at their expiry).
Expired and idle sessions are deleted when met, at every sign-in (a sweep), and by the TTL index
on `expire_at` (the absolute expiry; MongoDB's monitor, lazily on nx-27017). The last use is
written at most once a minute, never per request (the console polls every two seconds). Times are
epoch floats: exact on every backend; `expire_at` is a date only for the TTL index.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from app.persistence.sign_in_throttle import SignInThrottle

COLLECTION_NAME = "console_sessions"
#: Longest time between two writes of a session's last use (shorter with a short idle timeout).
TOUCH_SECONDS = 60.0
Document = dict[str, Any]


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def token_fingerprint(token: str, session_id: str) -> str:
    """What a session keeps of the token it was made with."""
    return hmac.new(token.encode(), session_id.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class SessionLimits:
    lifetime_seconds: float
    """From sign-in to the end, however active."""
    idle_seconds: float
    """Unused this long, the session is over."""

    @property
    def touch_seconds(self) -> float:
        """How stale the recorded last use may get: a minute, or a quarter of a short idle timeout."""
        return min(TOUCH_SECONDS, self.idle_seconds / 4)


class ConsoleSessions:
    def __init__(self, collection: AsyncCollection[Document], limits: SessionLimits, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._collection = collection
        self._limits = limits
        self._clock = clock

    async def setup(self) -> None:
        await self._collection.create_index("expire_at", expireAfterSeconds=0, name="expire_at_ttl")

    async def create(self, token: str) -> str:
        """A new session for whoever presented `token` (checked by the caller); its id, the cookie's value."""
        session_id = secrets.token_urlsafe(32)
        now = self._clock()
        expires = now + self._limits.lifetime_seconds
        await self._sweep(now)
        await self._collection.insert_one({
            "_id": _digest(session_id), "token": token_fingerprint(token, session_id), "created_at": now,
            "last_seen": now, "expires_at": expires, "expire_at": datetime.fromtimestamp(expires, UTC),
        })
        return session_id

    async def valid(self, session_id: str, token: str) -> bool:
        """Whether the session exists, is within its lifetime and idle timeout, and was made with `token`."""
        key = _digest(session_id)
        doc = await self._collection.find_one({"_id": key})
        if doc is None:
            return False
        now, last_seen = self._clock(), float(doc["last_seen"])
        if now >= float(doc["expires_at"]) or now - last_seen >= self._limits.idle_seconds:
            await self._collection.delete_one({"_id": key})
            return False
        if not hmac.compare_digest(str(doc["token"]), token_fingerprint(token, session_id)):
            return False
        if now - last_seen >= self._limits.touch_seconds:
            await self._collection.update_one({"_id": key, "last_seen": {"$lt": now}}, {"$set": {"last_seen": now}})
        return True

    async def revoke(self, session_id: str) -> None:
        await self._collection.delete_one({"_id": _digest(session_id)})

    async def _sweep(self, now: float) -> None:
        """Sessions past their expiry or idle timeout, also where no TTL monitor runs."""
        await self._collection.delete_many({"$or": [{"expires_at": {"$lte": now}},
                                                    {"last_seen": {"$lte": now - self._limits.idle_seconds}}]})


@dataclass(frozen=True)
class ConsoleStore:
    """What the console's sign-in needs: its sessions and the sign-in throttle."""

    sessions: ConsoleSessions
    throttle: SignInThrottle
