"""One git command on a workspace, within a deadline, for `app.agents.snapshots`.

Every command runs with the service's environment minus the variables that would point git at
another repository, index or object store, without prompts or optional index writes, in its own
process group (killed whole at the deadline or on cancellation), and optionally on a private
temporary index inside the git dir instead of `.git/index`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

log = logging.getLogger(__name__)

OBJECT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
"""A full SHA-1 or SHA-256 object name."""
#: Our folder inside the git dir: snapshot records and temporary indexes.
STATE_DIR = "jervis"
#: Variables that would point git at another repository, index or object store than the workspace's
#: (`git rev-parse --local-env-vars`); the service may itself run under a git hook or `git exec`.
REPOSITORY_ENV = frozenset({
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR",
})
#: Settings for commands on a temporary index: a split index would leave shared-index files behind.
TEMP_INDEX_CONFIG = ("-c", "core.splitIndex=false", "-c", "advice.addEmbeddedRepo=false")
#: A workspace's `.git/config` and hooks are the agent's to write: the service's own git never runs
#: a hook or an fsmonitor program from there (they would run outside the agent's sandbox).
NO_REPOSITORY_PROGRAMS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


class SnapshotError(RuntimeError):
    """A git command failed or missed its deadline; the message carries git's stderr."""


class GitCommand:
    """Runs `git` in a workspace; each command must end within `timeout_seconds`."""

    def __init__(self, git: str = "git", timeout_seconds: float = 60.0) -> None:
        self._git = git
        self._timeout = timeout_seconds

    async def run(self, workspace: Path, *args: str, index: Path | None = None, stdin: bytes | None = None,
                  ok_codes: tuple[int, ...] = (0,), warn: str = "") -> bytes:
        """stdout of one git command, within the deadline; its stderr in the error otherwise.
        With `index`, the command works on that temporary index instead of `.git/index`."""
        what = f"git {' '.join(args)}"
        config = TEMP_INDEX_CONFIG if index is not None else ()
        try:
            proc = await asyncio.create_subprocess_exec(
                self._git, "-c", "safe.directory=*", "-c", "core.quotepath=off", *NO_REPOSITORY_PROGRAMS, *config,
                *args,
                cwd=workspace, env=git_env(index),
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # its own process group: a wrapper's children die with it
            )
        except OSError as exc:
            raise SnapshotError(f"{what}: {exc}") from exc
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that arrives as git
            # finishes, and the cancelled run would go on to start its agent.
            async with asyncio.timeout(self._timeout):
                out, err = await proc.communicate(stdin)
        except BaseException as exc:  # deadline or cancellation: never leave git running on the workspace
            await kill_group(proc)
            if isinstance(exc, TimeoutError):
                raise SnapshotError(f"{what} timed out after {self._timeout:g} s") from None
            raise
        message = err.decode(errors="replace").strip()
        if proc.returncode not in ok_codes:
            raise SnapshotError(f"{what} failed (exit {proc.returncode}): {message}")
        if proc.returncode != 0 and warn:
            log.warning("%s in %s: %s", warn, workspace, message)
        return out


def git_env(index: Path | None) -> dict[str, str]:
    """The service's environment minus repository overrides; no prompts, no optional index writes."""
    env = {name: value for name, value in os.environ.items() if name not in REPOSITORY_ENV}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return env


async def kill_group(proc: asyncio.subprocess.Process) -> None:
    """Kill the whole process group (even if its leader is gone, a child may still hold the pipes) and reap."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()


@contextlib.asynccontextmanager
async def temp_index(git_dir: Path, *, seed: Path | None) -> AsyncIterator[Path]:
    """A private index file inside the git dir, seeded from `seed` when it exists; always removed."""
    folder = git_dir / STATE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="index-", dir=folder)
    os.close(fd)
    index = Path(name)
    try:
        if not (seed is not None and await asyncio.to_thread(copy_if_exists, seed, index)):
            index.unlink()  # git reads an empty file as a corrupt index, a missing one as an empty index
        yield index
    finally:
        index.unlink(missing_ok=True)
        index.with_name(index.name + ".lock").unlink(missing_ok=True)  # left by a killed git


def copy_if_exists(source: Path, target: Path) -> bool:
    """copy2, not copyfile: the copy keeps the index's mtime, which git's racy-clean check compares against."""
    try:
        shutil.copy2(source, target)
    except FileNotFoundError:
        return False
    return True


def decode_path(raw: bytes) -> str:
    """Paths are bytes to git; surrogateescape round-trips names that are not UTF-8."""
    return raw.decode("utf-8", errors="surrogateescape")


def encode_paths(paths: Iterable[str]) -> bytes:
    return b"".join(path.encode("utf-8", errors="surrogateescape") + b"\0" for path in paths)
