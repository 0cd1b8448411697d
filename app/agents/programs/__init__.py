"""The programs the local runner can run for an agent type, each installed on first use into its
own directory under `.cache/agents/` (never the service's virtualenv) and reached through the
entrypoint's environment (`AGENT_TYPE`, its model variables, its `PATH`).

`LocalProgram` is what `LocalAgents` needs of each: whether it is installed, a blocking install
(run in a thread, with progress lines), and the variables that make the entrypoint run it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

Log = Callable[[str], None]

#: Where relative install directories of the settings are resolved: the project directory.
PROJECT_ROOT = Path(__file__).resolve().parents[3]


class AgentInstallError(RuntimeError):
    """A program could not be installed (no package index, no disk space, no suitable interpreter)."""


class LocalProgram(Protocol):
    """One installable agent program of the local runner."""

    name: str
    """What `LOCAL_AGENTS` maps a type to, and the entrypoint's `AGENT_TYPE` for it."""

    def installed(self) -> bool:
        """The pinned version is installed and usable without a download."""
        ...

    def install(self, log: Log) -> None:
        """Install the pinned version (blocking; the caller runs it in a thread). Raises
        AgentInstallError with the installer's output tail."""
        ...

    def env(self) -> dict[str, str]:
        """The entrypoint's variables for this program (once installed): `AGENT_TYPE`, the model
        and its endpoint, a `PATH` reaching the program."""
        ...

    def describe(self) -> str:
        """One line for `/health` and the start-up log: version, model, install state."""
        ...


def resolve(path: str | Path) -> Path:
    """A settings path: absolute as given, relative under the project directory."""
    path = Path(path)
    return path if path.is_absolute() else PROJECT_ROOT / path
