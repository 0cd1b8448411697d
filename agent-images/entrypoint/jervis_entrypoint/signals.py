"""Stop signals for the child: the pod's PID 1 (the entrypoint) gets SIGTERM, not the agent or the
test command, so it passes the signal on and still writes its result; a test command's whole
process group is stopped, with SIGKILL for what outlives the grace."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from types import FrameType

#: Seconds between SIGTERM and SIGKILL for a test command's process group (timeout or stop signal).
KILL_GRACE = 5.0
#: Seconds a test command gets after a forwarded SIGTERM/SIGINT; below the local runner's own 5 s
#: grace, so the entrypoint still writes its result before it is killed itself.
STOP_GRACE = 3.0


class Forwarder:
    """Passes SIGTERM/SIGINT on to the agent (a pod's PID 1 gets the signal, not the agent), so the
    agent ends first and the entrypoint still writes its result.

    With `group`, the signal goes to the child's whole process group (a test command's own children
    included), and what still runs STOP_GRACE seconds later is killed."""

    def __init__(self, *, group: bool = False) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.received: str | None = None
        self.group = group
        self.killer: threading.Timer | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received = signal.Signals(signum).name
        if self.process is None:
            return
        if not self.group:
            if self.process.poll() is None:
                self.process.send_signal(signum)
            return
        signal_group(self.process, signum)
        if self.killer is None:
            self.killer = threading.Timer(STOP_GRACE, signal_group, (self.process, signal.SIGKILL))
            self.killer.daemon = True
            self.killer.start()

    def cancel(self) -> None:
        """No late SIGKILL once the process group has been dealt with."""
        if self.killer is not None:
            self.killer.cancel()


def signal_group(process: subprocess.Popen[str], signum: int) -> bool:
    """Signal the process group a child leads (started with `start_new_session`); False when the
    group is already empty (or, never expected, not ours: a signal must not crash the entrypoint)."""
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def stop_group(process: subprocess.Popen[str], reader: threading.Thread) -> None:
    """SIGTERM what is left of the command's process group; SIGKILL it when it still runs, or still
    holds the output open, KILL_GRACE seconds later."""
    if not signal_group(process, signal.SIGTERM):
        return  # nothing left: the usual end
    deadline = time.monotonic() + KILL_GRACE
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(KILL_GRACE)
    reader.join(max(0.0, deadline - time.monotonic()))
    if process.poll() is None or reader.is_alive():
        signal_group(process, signal.SIGKILL)
