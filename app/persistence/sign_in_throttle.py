"""Wrong tokens at the console's sign-in, counted per client in MongoDB.

In MongoDB rather than in the process: the Deployment runs two replicas behind one Service, and a
count per pod would let a client guess twice as often (and a restart would forget it). A sign-in
costs one or two small operations, and sign-ins are rare.

A sliding window: each client has one document holding the times of its last `attempts` wrong
tokens (`$push` with `$slice`, atomic). When all of them are less than a minute old the client is
refused, every attempt and the right token included (a guesser must not learn that a guess was
right while throttled), until the oldest is a minute old; the answer says when (`Retry-After`).
Refused attempts are not counted: a user who mistyped waits at most the minute he is told.
The client is the connection's address, which uvicorn replaces by the forwarded one only when the
request came through a proxy named in `TRUSTED_PROXIES` (`app/serve.py`); an IPv6 client is its /64, the
block one subscriber gets. Documents expire by a TTL index and by a sweep at each wrong token.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

COLLECTION_NAME = "console_sign_in_attempts"
WINDOW_SECONDS = 60.0
Document = dict[str, Any]


def client_key(host: str | None) -> str:
    """Whom the attempts are counted for: the address, an IPv6 one by its /64."""
    try:
        address = ipaddress.ip_address(host or "")
    except ValueError:
        return host or "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class SignInThrottle:
    def __init__(self, collection: AsyncCollection[Document], *, attempts: int,
                 clock: Callable[[], float] = time.time) -> None:
        self._collection = collection
        self._attempts = attempts
        self._clock = clock

    async def setup(self) -> None:
        await self._collection.create_index("expire_at", expireAfterSeconds=0, name="expire_at_ttl")

    async def refused_for(self, client: str | None) -> int | None:
        """Whole seconds until `client` may try again when it used up its wrong tokens, else None."""
        doc = await self._collection.find_one({"_id": client_key(client)})
        now = self._clock()
        recent = sorted(float(t) for t in (doc or {}).get("failures", []) if float(t) > now - WINDOW_SECONDS)
        if len(recent) < self._attempts:
            return None
        return max(1, math.ceil(recent[-self._attempts] + WINDOW_SECONDS - now))

    async def wrong(self, client: str | None) -> None:
        """Count a wrong token of `client`."""
        now = self._clock()
        until = now + WINDOW_SECONDS
        update = {"$push": {"failures": {"$each": [now], "$slice": -self._attempts}},
                  "$set": {"until": until, "expire_at": datetime.fromtimestamp(until, UTC)}}
        key = client_key(client)
        try:
            await self._collection.update_one({"_id": key}, update, upsert=True)
        except DuplicateKeyError:  # a concurrent first attempt inserted it: now it is there to update
            await self._collection.update_one({"_id": key}, update, upsert=True)
        await self._collection.delete_many({"until": {"$lt": now}})
