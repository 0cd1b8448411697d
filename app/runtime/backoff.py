"""The capped exponential backoff every retry loop of the service uses."""

from __future__ import annotations


def capped_delay(failures: int, base: float, cap: float) -> float:
    """Delay after the `failures`-th failure in a row: `base`, doubling each time, never above `cap`."""
    factor: int = 2 ** max(0, failures - 1)  # int ** int is typed Any (a negative power is a float)
    return min(cap, base * factor)
