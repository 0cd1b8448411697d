"""Helper servers as child processes (the embedded MongoDB and the embedded model).

Output goes to a file (read back for error messages), the child dies with its parent even when
the parent is SIGKILLed (Linux), and stopping is SIGTERM, then SIGKILL after a grace period.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO


def die_with_parent() -> None:
    """`preexec_fn`: the child gets SIGTERM when its parent dies (Linux; elsewhere a no-op)."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class ChildProcess:
    def __init__(self, output_file: Path, *, grace_seconds: float = 5.0) -> None:
        self.output_file = output_file
        self._grace = grace_seconds
        self.process: subprocess.Popen[bytes] | None = None
        self._output: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def spawn(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None) -> None:
        """Start the child; OSError (cannot execute) propagates with nothing left open."""
        self._output = self.output_file.open("wb")
        try:
            self.process = subprocess.Popen(
                list(argv), cwd=cwd, env=dict(env) if env is not None else None, stdin=subprocess.DEVNULL,
                stdout=self._output, stderr=subprocess.STDOUT, preexec_fn=die_with_parent,
            )
        except OSError:
            self._close_output()
            raise

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after the grace period. Safe to call any number of times."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=self._grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._close_output()

    def _close_output(self) -> None:
        if self._output is not None:
            self._output.close()
            self._output = None
