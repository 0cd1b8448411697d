"""The capped exponential backoff every retry loop of the service uses."""

from __future__ import annotations


def capped_delay(failures: int, base: float, cap: float) -> float:
    """Delay after the `failures`-th failure in a row: `base`, doubling each time, never above `cap`."""
    return min(cap, base * 2 ** max(0, failures - 1))
