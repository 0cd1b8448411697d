"""Child processes that never outlive the service (the dev servers, the one-time installers).

Linux only: the child gets SIGTERM when the thread that started it ends, even when the parent is
SIGKILLed; elsewhere this is a no-op.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import sys


def die_with_parent() -> None:
    """`preexec_fn`: the child gets SIGTERM when its parent dies (Linux; elsewhere a no-op)."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
