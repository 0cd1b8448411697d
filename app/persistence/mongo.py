"""MongoDB client factory: one place that fixes the client options the whole service relies on."""

from __future__ import annotations

import time
from typing import Any

from pymongo import AsyncMongoClient

APP_NAME = "jervis-orchestrator"


def create_client(url: str, *, server_selection_timeout_ms: int = 5000) -> AsyncMongoClient[dict[str, Any]]:
    """Async client with tz-aware datetimes (stored times compare with ``datetime.now(UTC)``).

    The short server-selection timeout makes an unreachable MongoDB fail a request or a health
    check in seconds instead of pymongo's default 30 s. Creating the client does no I/O.
    """
    return AsyncMongoClient(
        url,
        tz_aware=True,
        appname=APP_NAME,
        serverSelectionTimeoutMS=server_selection_timeout_ms,
    )


async def ping(client: AsyncMongoClient[Any]) -> float:
    """Round-trip a ``ping`` and return its latency in seconds; raises PyMongoError on failure."""
    started = time.perf_counter()
    await client.admin.command("ping")
    return time.perf_counter() - started
