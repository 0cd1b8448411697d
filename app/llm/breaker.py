"""Keeping a failing model provider at arm's length: which failures are worth another try, and
a circuit breaker that skips a provider for a while after repeated failures."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class CircuitBreaker:
    """A provider that keeps failing is skipped for a while instead of being hammered."""

    def __init__(self, failures: int, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = failures
        self._seconds = seconds
        self._clock = clock
        self._failures: dict[str, int] = {}
        self._open_until: dict[str, float] = {}

    def is_open(self, provider: str) -> bool:
        return self._open_until.get(provider, 0.0) > self._clock()

    def success(self, provider: str) -> None:
        self._failures.pop(provider, None)
        self._open_until.pop(provider, None)

    def failure(self, provider: str) -> None:
        count = self._failures.get(provider, 0) + 1
        self._failures[provider] = count
        if count >= self._limit:
            self._open_until[provider] = self._clock() + self._seconds
            log.warning("LLM provider %s failed %d times: skipped for %.0f s", provider, count, self._seconds)


def transient(exc: Exception) -> bool:
    """429, 5xx and connection problems are worth another try; a bad request is not."""
    cause = exc.__cause__
    status = getattr(cause, "status_code", None)
    if status in (429, 500, 502, 503, 504):
        return True
    return type(cause).__name__ in ("APIConnectionError", "ServiceUnavailableError", "RateLimitError",
                                    "InternalServerError", "Timeout")
