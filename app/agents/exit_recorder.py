"""Run a command and record how it ended in a file: `exit_recorder.py STATUS_FILE -- COMMAND…`.

The local runner starts the agent entrypoint through this, so the agent's exit code survives
the service: when the service dies mid-step, nobody is left to `wait()` for the agent, and the
service that re-attaches reads the code from STATUS_FILE instead. It runs outside the agent's
sandbox, and STATUS_FILE is in the job's folder of the service's own (`local_process`), which
the sandbox hides: the agent can neither forge nor remove its exit code. Standard library only,
run by path (not as part of the app package), so it starts in milliseconds.

Signals: the runner stops an agent by signalling its whole process group, which includes the
command itself; this process only notes the signal and outlives the command, so its exit status
is still recorded (the entrypoint writes its result on SIGTERM before it exits).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def record(status_file: Path, exit_code: int) -> None:
    """`{"exit_code": N, "ended_at": epoch}`, written atomically; N < 0: killed by signal -N. The
    temporary file is new (`O_EXCL`, never through a symlink), the service's own (0600)."""
    temporary = status_file.with_name(f".{status_file.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"exit_code": exit_code, "ended_at": time.time()}))
    os.replace(temporary, status_file)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: exit_recorder.py STATUS_FILE -- COMMAND [ARG…]", file=sys.stderr)
        return 2
    status_file, command = Path(argv[1]), argv[3:]
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        # A handler, not SIG_IGN: an ignored signal would stay ignored in the command after exec.
        signal.signal(signum, lambda *_: None)
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"exit_recorder: cannot start {command[0]}: {exc}", flush=True)
        record(status_file, 127)
        return 127
    exit_code = child.wait()
    record(status_file, exit_code)
    return exit_code if exit_code >= 0 else 128 - exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
