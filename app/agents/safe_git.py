"""Every git command the service runs on a workspace, run so that nothing an agent wrote can make
it run a program or read another repository.

The service's git (snapshots, goals' worktrees, their merge) runs outside the agent's sandbox, on
a repository whose working tree the agent writes and whose git directory it may have written
(an unconfined Aider, a sandbox turned off, a hole elsewhere). Git takes programs from its
configuration (filters, diff and merge drivers, textconv, hooks, fsmonitor, gpg, ssh) and lets a
repository redirect itself (`commondir` to another git directory, a `.git` file saying
`gitdir: …`, `objects/info/alternates`, `info/attributes` that outranks `.gitattributes`). So each
command here:

- finds its repository where the service put it, never by discovery: `GIT_DIR`, `GIT_WORK_TREE`
  and (for a goal's worktree) `GIT_COMMON_DIR` are set from `pin`, which first refuses, with a
  clear `UnsafeRepositoryError` and nothing run, a `.git` that is a symlink, a `gitdir:` file
  where the service made a directory (or, in a goal's worktree, one that does not lead to the git
  directory `git worktree add` made there), a `commondir` it did not write, `objects/info/alternates`
  and an `info/attributes` that is not the service's own;
- reads no system or user configuration (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`) and
  overrides on the command line (which outranks the repository's configuration) every setting that
  runs a program or reaches a remote for the commands the service runs: `PROGRAM_SETTINGS`;
- runs under the service's `info/attributes` (`* !filter !diff !merge`, written once, at the top
  of the attribute precedence): no filter, diff driver, textconv or merge driver any
  `.gitattributes` names is ever selected, while `text`, `eol` and `binary` keep working.

The agent's sandbox binds the git directory read-only (`sandbox.bwrap_argv`), so all of this is
defence in depth locally; the entrypoint's git mode (`jervis_entrypoint/safe_git.py`) applies the
same rules in the git Job on Kubernetes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

from app.agents.confinement import UnsafeReadError, inside, read_inside, read_text_inside

log = logging.getLogger(__name__)

#: The folder beside a workspace that holds its goals' worktrees (`<workspace>.jervis-goals/`).
WORKTREES_SUFFIX = ".jervis-goals"
#: The service's `info/attributes`: highest in git's attribute precedence, so whatever a
#: `.gitattributes` (or a macro in one) says, no filter, diff or merge driver is selected (`!`
#: makes them unspecified: git's built-in behaviour). Byte-identical in the entrypoint's copy.
ATTRIBUTES = b"# written by jervis: no filter, diff or merge driver runs from this repository's attributes\n" \
             b"* !filter !diff !merge\n"
#: `-c` settings (the command line outranks every configuration file) of every command: no hook,
#: fsmonitor, signing, automatic gc or maintenance, submodule recursion or remote transport.
PROGRAM_SETTINGS = (
    "safe.directory=*", "core.quotepath=off", "core.hooksPath=/dev/null", "core.fsmonitor=false",
    "core.attributesFile=/dev/null", "commit.gpgSign=false", "tag.gpgSign=false", "gc.auto=0",
    "maintenance.auto=false", "submodule.recurse=false", "protocol.allow=never", "core.sshCommand=false",
    "core.pager=cat", "core.editor=false", "credential.helper=",
)
#: Settings for commands on a temporary index: a split index would leave shared-index files behind.
TEMP_INDEX_SETTINGS = ("core.splitIndex=false", "advice.addEmbeddedRepo=false")
#: Variables that would point git at another repository, index, object store or configuration
#: (`git rev-parse --local-env-vars`, and the configuration ones); the service may itself run
#: under a git hook or `git exec`.
REPOSITORY_ENV = frozenset({
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR", "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_GLOBAL", "GIT_ATTR_SOURCE", "GIT_EXTERNAL_DIFF", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS",
    "GIT_EDITOR", "GIT_PAGER", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR",
})
#: The most a `.git` file or a `commondir`/`gitdir` record may hold.
RECORD_BYTES = 4096


class SnapshotError(RuntimeError):
    """A git command failed or missed its deadline; the message carries git's stderr."""


class UnsafeRepositoryError(SnapshotError):
    """The workspace's git metadata is not as the service made it; no git command was run."""


@dataclass(frozen=True)
class Pinned:
    """Where git finds the repository of a workspace: given to it, never discovered."""

    work_tree: Path
    git_dir: Path
    """`.git`, or for a goal's worktree its own folder under the main `.git/worktrees/`."""
    common_dir: Path
    """The git directory holding objects, refs, config and `info/` (the main `.git`)."""

    def env(self) -> dict[str, str]:
        return {"GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.work_tree),
                "GIT_COMMON_DIR": str(self.common_dir)}


def has_git(workspace: Path) -> bool:
    """Whether the workspace has a `.git` of any kind (no discovery upwards: a subdirectory of a
    repository is not one)."""
    return os.path.lexists(workspace / ".git")


def pin(workspace: Path) -> Pinned:
    """The repository at the top of `workspace`, checked; `UnsafeRepositoryError` says what is wrong."""
    work_tree = Path(os.path.realpath(workspace))  # git records a worktree's real path
    dot_git = work_tree / ".git"
    if dot_git.is_symlink():
        where = "" if inside(work_tree, dot_git) else " leading outside the workspace"
        raise UnsafeRepositoryError(f"{dot_git} is a symlink{where}; the service's git does not follow it")
    if dot_git.is_dir():
        check_common_dir(dot_git)
        return Pinned(work_tree, dot_git, dot_git)
    if not dot_git.is_file():
        raise UnsafeRepositoryError(f"{work_tree} has no .git: not a repository")
    if not work_tree.parent.name.endswith(WORKTREES_SUFFIX):
        raise UnsafeRepositoryError(f"{dot_git} is a 'gitdir:' file where the service made a git directory; "
                                    "git would follow it to a directory nobody checked")
    return _pin_worktree(work_tree, dot_git)


def _pin_worktree(work_tree: Path, dot_git: Path) -> Pinned:
    """A goal's worktree: its `.git` file must lead to `<main>/.git/worktrees/<name>`, whose
    `commondir` leads back to `<main>/.git` and whose `gitdir` names this `.git` file."""
    main = work_tree.parent.with_name(work_tree.parent.name.removesuffix(WORKTREES_SUFFIX))
    common = main / ".git"
    if common.is_symlink() or not common.is_dir():
        raise UnsafeRepositoryError(f"{common} (the main workspace's git directory) is not a directory")
    pointer = _record(work_tree, ".git", prefix="gitdir:")
    git_dir = Path(os.path.normpath(work_tree / pointer))
    if git_dir.parent != common / "worktrees" or git_dir.is_symlink() or not git_dir.is_dir() \
            or Path(os.path.realpath(git_dir)) != git_dir:
        raise UnsafeRepositoryError(f"{dot_git} points to {git_dir}, not to the worktree's folder in "
                                    f"{common}/worktrees where the service made it")
    if Path(os.path.normpath(git_dir / _record(git_dir, "commondir"))) != common:
        raise UnsafeRepositoryError(f"{git_dir}/commondir does not lead to {common}")
    if Path(os.path.normpath(git_dir / _record(git_dir, "gitdir"))) != dot_git:
        raise UnsafeRepositoryError(f"{git_dir}/gitdir does not name {dot_git}")
    check_common_dir(common)
    return Pinned(work_tree, git_dir, common)


def check_common_dir(common: Path) -> None:
    """A repository's own git directory: no `commondir` (it would take config, objects and refs
    from elsewhere), no alternates, and no `info/attributes` but the service's."""
    for name in ("commondir", "objects/info/alternates"):
        if os.path.lexists(common / name):
            raise UnsafeRepositoryError(f"{common / name} exists; the service's git does not use a repository "
                                        "that takes its objects or configuration from elsewhere")
    try:
        current = read_inside(common, "info/attributes", max_bytes=RECORD_BYTES)
    except FileNotFoundError:
        return
    except (UnsafeReadError, OSError) as exc:
        raise UnsafeRepositoryError(f"{common}/info/attributes cannot be checked: {exc}") from exc
    if current != ATTRIBUTES:
        raise UnsafeRepositoryError(f"{common}/info/attributes was not written by the service; its attributes "
                                    "would outrank the service's and could name a filter or driver")


def ensure_attributes(common: Path) -> None:
    """Write the service's `info/attributes` when it is missing (atomically; `info/` must be a real
    directory). Called after `check_common_dir`, which refused any other content."""
    info = common / "info"
    if info.is_symlink():
        raise UnsafeRepositoryError(f"{info} is a symlink")
    if (info / "attributes").exists():
        return
    info.mkdir(exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".attributes-", dir=info)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(ATTRIBUTES)
        os.replace(name, info / "attributes")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def _record(folder: Path, name: str, *, prefix: str = "") -> str:
    """A one-line record git keeps in a file (`gitdir: …`, `commondir`), read without following links."""
    try:
        text = read_text_inside(folder, name, max_bytes=RECORD_BYTES).strip()
    except (UnsafeReadError, OSError) as exc:
        raise UnsafeRepositoryError(f"{folder / name} cannot be read safely: {exc}") from exc
    if not text.startswith(prefix) or "\n" in text:
        raise UnsafeRepositoryError(f"{folder / name} is not a {prefix or name} record")
    return text.removeprefix(prefix).strip()


def git_env(pinned: Pinned, index: Path | None) -> dict[str, str]:
    """The service's environment minus repository and configuration overrides, pinned to the
    repository; no system or user configuration, prompts, optional index writes or lazy fetches."""
    env = {name: value for name, value in os.environ.items()
           if name not in REPOSITORY_ENV and not name.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "GIT_TRACE"))}
    env.update(pinned.env(), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_ATTR_NOSYSTEM="1",
               GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_NO_REPLACE_OBJECTS="1", GIT_NO_LAZY_FETCH="1",
               GIT_PROTOCOL_FROM_USER="0")
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return env


def settings_args(extra: tuple[str, ...] = ()) -> list[str]:
    return [arg for setting in (*PROGRAM_SETTINGS, *extra) for arg in ("-c", setting)]


class GitCommand:
    """Runs `git` on a workspace's pinned repository; each command must end within `timeout_seconds`."""

    def __init__(self, git: str = "git", timeout_seconds: float = 60.0) -> None:
        self._git = git
        self._timeout = timeout_seconds

    def pin(self, workspace: Path) -> Pinned:
        """The workspace's repository, checked, with the service's `info/attributes` in place."""
        pinned = pin(workspace)
        try:
            ensure_attributes(pinned.common_dir)
        except OSError as exc:
            raise UnsafeRepositoryError(f"cannot write {pinned.common_dir}/info/attributes: {exc}") from exc
        return pinned

    async def run(self, workspace: Path, *args: str, index: Path | None = None, stdin: bytes | None = None,
                  ok_codes: tuple[int, ...] = (0,), warn: str = "", settings: tuple[str, ...] = ()) -> bytes:
        """stdout of one git command, within the deadline; its stderr in the error otherwise.
        With `index`, the command works on that temporary index instead of the repository's;
        `settings` adds `-c` settings of the caller's."""
        what = f"git {' '.join(args)}"
        if index is not None:
            settings = (*TEMP_INDEX_SETTINGS, *settings)
        pinned = await asyncio.to_thread(self.pin, workspace)
        try:
            proc = await asyncio.create_subprocess_exec(
                self._git, *settings_args(settings), *args,
                cwd=pinned.work_tree, env=git_env(pinned, index),
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


async def kill_group(proc: asyncio.subprocess.Process) -> None:
    """Kill the whole process group (even if its leader is gone, a child may still hold the pipes) and reap."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()
