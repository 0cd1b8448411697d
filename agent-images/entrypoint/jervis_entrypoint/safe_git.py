"""The git of the entrypoint's git mode (commit, push: in the git Job on Kubernetes, unconfined on
the local runner) run so that nothing an agent wrote into the workspace makes it run a program.

The same rules as the service's own git (`app/agents/safe_git.py`; this package runs in the images
and cannot import it): the repository is found where the service made it (`GIT_DIR` and
`GIT_WORK_TREE`, no discovery), and before git mode runs anything, `check_repository` refuses a
`.git` that is not a directory (a symlink, a `gitdir:` file), a `commondir`, `objects/info/alternates`
and an `info/attributes` that is not the service's own, then writes that one: `* !filter !diff
!merge` outranks every `.gitattributes`, so no filter, diff or merge driver the workspace's
attributes name is ever selected. Every command sets `-c` settings (which outrank the repository's
configuration) that turn off hooks, fsmonitor, submodule recursion, automatic gc and the `ext::`
transport.

What git mode keeps, on purpose: the user's own system and global configuration (their identity and
signing for the commit; credential helpers, `core.sshCommand` and the SSH agent for the push). The
agent never writes those (the sandbox hides HOME; a Job's home is the image's), and the push needs
them; only what the workspace names is refused. The repository's own `.git/config` is the user's:
the agent's sandbox binds `.git` read-only and the runner's guard puts back any change.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

#: Byte-identical to `app.agents.safe_git.ATTRIBUTES` (a test holds them equal).
ATTRIBUTES = b"# written by jervis: no filter, diff or merge driver runs from this repository's attributes\n" \
             b"* !filter !diff !merge\n"
#: `-c` settings of every git command the entrypoint runs.
PROGRAM_SETTINGS = (
    "safe.directory=*", "core.quotepath=off", "core.hooksPath=/dev/null", "core.fsmonitor=false",
    "submodule.recurse=false", "push.recurseSubmodules=no", "fetch.recurseSubmodules=false",
    "protocol.ext.allow=never", "gc.auto=0", "maintenance.auto=false",
)
#: Variables that would point git at another repository, index or object store (`git rev-parse
#: --local-env-vars`): the repository is the workspace's, pinned.
REPOSITORY_ENV = frozenset({
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR", "GIT_ATTR_SOURCE", "GIT_EXTERNAL_DIFF",
})
#: The most an `info/attributes` may hold to be compared.
RECORD_BYTES = 4096


class UnsafeRepositoryError(RuntimeError):
    """The workspace's git metadata is not as the service made it; git mode runs nothing."""


def settings_args() -> list[str]:
    return [arg for setting in PROGRAM_SETTINGS for arg in ("-c", setting)]


def pinned_env(workspace: Path) -> dict[str, str]:
    """`os.environ` without repository overrides, pinned to the workspace's `.git` when it is a
    directory (a goal's worktree in agent mode, inside the sandbox, has a `gitdir:` file: git
    finds its repository itself there)."""
    env = {name: value for name, value in os.environ.items() if name not in REPOSITORY_ENV}
    dot_git = workspace / ".git"
    if dot_git.is_dir() and not dot_git.is_symlink():
        env.update(GIT_DIR=str(dot_git), GIT_WORK_TREE=str(workspace))
    return env


def check_repository(workspace: Path) -> None:
    """Refuse a repository git mode must not touch (the message says why), else make sure the
    service's `info/attributes` is in place."""
    dot_git = workspace / ".git"
    if dot_git.is_symlink():
        raise UnsafeRepositoryError(f"{dot_git} is a symlink; git mode does not follow it")
    if dot_git.is_file():
        raise UnsafeRepositoryError(f"{dot_git} is a 'gitdir:' file where the service made a git directory; "
                                    "git would follow it to a directory nobody checked")
    if not dot_git.is_dir():
        raise UnsafeRepositoryError(f"{workspace} has no .git directory: not a repository")
    for name in ("commondir", "objects/info/alternates"):
        if os.path.lexists(dot_git / name):
            raise UnsafeRepositoryError(f"{dot_git / name} exists; git mode does not use a repository that "
                                        "takes its objects or configuration from elsewhere")
    info = dot_git / "info"
    if info.is_symlink() or (info.exists() and not info.is_dir()):
        raise UnsafeRepositoryError(f"{info} is not a directory")
    current = _read_regular(info / "attributes")
    if current is None:
        _write_attributes(info)
    elif current != ATTRIBUTES:
        raise UnsafeRepositoryError(f"{info / 'attributes'} was not written by the service; its attributes would "
                                    "outrank the service's and could name a filter or driver")


def _read_regular(path: Path) -> bytes | None:
    """A small regular file's bytes without following a link; None when it is not there."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UnsafeRepositoryError(f"{path} cannot be read safely: {exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise UnsafeRepositoryError(f"{path} is not a regular file")
        return handle.read(RECORD_BYTES + 1)


def _write_attributes(info: Path) -> None:
    try:
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
    except OSError as exc:
        raise UnsafeRepositoryError(f"cannot write {info / 'attributes'}: {exc}") from exc
