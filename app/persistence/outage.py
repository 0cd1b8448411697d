"""Waiting out a MongoDB outage: ping with backoff until it answers again, within a deadline.

A run whose checkpoint (or any other MongoDB operation) fails because MongoDB cannot be reached
is not over: it waits here, keeping its slot, and continues from its last checkpoint once
MongoDB answers. Past the deadline (`MONGODB_OUTAGE_WAIT_SECONDS`) the caller gives up its turn
instead (a run is suspended for recovery), never ends the run in error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pymongo.errors import PyMongoError

from app.persistence.mongo import is_unreachable
from app.runtime.backoff import capped_delay

log = logging.getLogger(__name__)

T = TypeVar("T")
Probe = Callable[[], Awaitable[object]]


class MongoUnavailableError(RuntimeError):
    """MongoDB did not answer before the deadline of a wait."""


class MongoOutage:
    """Pings MongoDB with exponential backoff (`first_delay` doubling to `max_delay`) until it
    answers. ``waiting`` counts the waits in progress (a gauge on /metrics)."""

    def __init__(self, probe: Probe, *, wait_seconds: float, first_delay: float = 0.25, max_delay: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._probe = probe
        self.wait_seconds = wait_seconds
        self._first_delay = first_delay
        self._max_delay = max_delay
        self._clock = clock
        self.waiting = 0

    def deadline(self) -> float:
        """The deadline of an outage that begins now (on this waiter's clock)."""
        return self._clock() + self.wait_seconds

    async def wait(self, deadline: float) -> None:
        """Return once a ping answers; raise MongoUnavailableError once ``deadline`` has passed."""
        failures = 0
        problem = "no answer yet"
        self.waiting += 1
        try:
            while (remaining := deadline - self._clock()) > 0:
                try:
                    async with asyncio.timeout(remaining):
                        await self._probe()
                    return
                except (PyMongoError, TimeoutError) as exc:
                    problem = f"{type(exc).__name__}: {exc}"[:300]
                remaining = deadline - self._clock()
                if remaining <= 0:
                    break
                failures += 1
                await asyncio.sleep(min(capped_delay(failures, self._first_delay, self._max_delay), remaining))
            raise MongoUnavailableError(f"MongoDB unreachable for {self.wait_seconds:g} s ({problem})")
        finally:
            self.waiting -= 1

    async def call(self, operation: Callable[[], Awaitable[T]], what: str) -> T:
        """Run ``operation``; while it fails because MongoDB is unreachable, wait for MongoDB and
        run it again, until one outage's deadline. Other errors pass through at once."""
        deadline: float | None = None
        while True:
            try:
                return await operation()
            except Exception as exc:
                if not is_unreachable(exc):
                    raise
                if deadline is None:
                    deadline = self.deadline()
                    log.warning("%s: MongoDB unreachable (%s); waiting up to %g s", what, type(exc).__name__,
                                self.wait_seconds)
                await self.wait(deadline)
