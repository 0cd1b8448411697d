"""One-time installers of the dev launcher's helpers (the embedded model, the local Aider).

Both share the same two needs: one installer at a time per cache directory (two launchers, or a
launcher and a running service, starting together) and a child process whose output goes to a log
file, each line also handed to a progress callback, and which never outlives an aborted start.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from app.runtime.child_process import die_with_parent

LOG_TAIL_CHARS = 4000


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """One installer at a time per directory (an exclusive flock on `directory/.lock`)."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_logged(command: Sequence[str], log_file: Path, *, what: str, error: type[Exception],
               on_line: Callable[[str], None] | None = None, env: Mapping[str, str] | None = None) -> None:
    """Run `command` with its output in `log_file`, each line also given to `on_line`; a non-zero
    exit raises `error` with the log's tail.

    The child runs in its own process group, which is killed if this process is interrupted
    (Ctrl-C, SIGTERM turned into SystemExit, a cancelled thread's owner exiting), so no compiler
    or pip outlives an aborted start.
    """
    with log_file.open("w") as sink:
        process = subprocess.Popen(
            list(command), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, env=dict(env) if env is not None else None, start_new_session=True,
            preexec_fn=die_with_parent,
        )
        try:
            assert process.stdout is not None
            for line in process.stdout:
                sink.write(line)
                if on_line is not None:
                    on_line(line)
            code = process.wait()
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            process.wait()
            raise
    if code != 0:
        tail = log_file.read_text(errors="replace")[-LOG_TAIL_CHARS:]
        raise error(f"{what} failed (exit {code}); full log {log_file}:\n{tail}")


def pip_progress(log: Callable[[str], None], started: float, *, name: str,
                 every: int = 25) -> Callable[[str], None]:
    """A `run_logged` line callback for `pip install`: a line every `every` packages pip collects,
    then one for the (long, silent) install step, each prefixed with `name`."""
    collected = 0

    def on_line(line: str) -> None:
        nonlocal collected
        if line.startswith("Collecting "):
            collected += 1
            if collected % every == 0:
                log(f"{name}: {collected} packages resolved ({time.monotonic() - started:.0f} s)")
        elif line.startswith("Installing collected packages"):
            log(f"{name}: unpacking {collected} packages ({time.monotonic() - started:.0f} s) …")

    return on_line


#: The file that marks a finished install; it names the package spec, so a changed pin reinstalls.
MARKER = ".jervis-installed"


def is_marked(directory: Path, spec: str) -> bool:
    """An install of `spec` finished in `directory` (its marker names exactly that spec)."""
    marker = directory / MARKER
    return marker.is_file() and marker.read_text(encoding="utf-8").strip() == spec


def mark(directory: Path, spec: str) -> None:
    """Record that `spec` is installed in `directory` (last, once the install checked out)."""
    (directory / MARKER).write_text(spec + "\n", encoding="utf-8")
