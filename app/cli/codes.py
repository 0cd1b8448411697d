"""Exit codes of the terminal client, one place for the commands and their `--help`."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    DONE = 0
    """The run finished (or the command succeeded)."""
    FAILED = 1
    """The run ended with an error (or `status` shows one)."""
    REJECTED_REQUEST = 2
    """The service refused the request (HTTP 4xx), or the command line / workspace was wrong."""
    UNREACHABLE = 3
    """The service could not be reached, or is not healthy."""
    BUSY = 4
    """The service is busy with another run (HTTP 429) and `--wait-busy` ran out."""
    USER_STOPPED = 5
    """The user rejected a gate or cancelled the run."""
    WAITING = 6
    """The run waits for an answer nobody gave (stdin closed); answer with `approve`."""
    DETACHED = 130
    """Ctrl-C twice: the client left; the run goes on in the service."""


HELP = "\n".join([
    "\b",
    "Exit codes:",
    "  0  done",
    "  1  the run failed",
    "  2  request refused (HTTP 4xx) or bad arguments",
    "  3  service unreachable or unhealthy",
    "  4  service busy (HTTP 429), --wait-busy exhausted",
    "  5  you rejected a gate or cancelled the run",
    "  6  the run waits for an answer (stdin closed)",
    "  130  left with Ctrl-C; the run continues in the service",
])
