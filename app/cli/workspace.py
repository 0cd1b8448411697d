"""Placing the user's repository under the service's DATA_ROOT, and bringing the result back.

The service accepts only a `workspace_path` relative to its DATA_ROOT (no symlinks out of it),
and its agents and git steps change the files there. So the client never hands it the user's
own directory: a git repository is cloned (`git clone --local`) into
`<data-root>/cli/<name>-<hash of its path>` once, and later runs fetch the user's current HEAD
into that clone and reset it. The user's working tree, index and branches are untouched until
the run is done; then only the new branch is fetched back (`git fetch <clone> b:b`, never a
checkout). A directory that is not a repository is copied instead.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

CLI_DIR = "cli"
COPY_SKIP = (".git", ".venv", "node_modules")
#: The clone's own branch when the user's HEAD is detached.
DETACHED_BRANCH = "jervis-base"
GIT_TIMEOUT_SECONDS = 300.0


class PlacementError(RuntimeError):
    """The workspace could not be prepared (git failed, no commit yet, another run uses it)."""


@dataclass(frozen=True)
class PlacedWorkspace:
    source: Path
    """The user's repository (its top level) or directory."""
    path: Path
    """The workspace under DATA_ROOT the service works in."""
    relative: str
    """`workspace_path` of the request: `path` relative to DATA_ROOT, POSIX separators."""
    is_git: bool
    base: str | None = None
    """The commit the clone was reset to (the user's HEAD)."""
    notes: list[str] = field(default_factory=list)
    """What the user should know (uncommitted changes left out, a subdirectory widened)."""


@dataclass(frozen=True)
class Changes:
    """What a run changed in the workspace so far, against the user's HEAD."""

    files: list[str]
    stat: str


@dataclass(frozen=True)
class FetchBack:
    fetched: bool
    message: str
    command: str | None = None
    """What the user can run instead, when the fetch was not possible."""


def git(cwd: Path, *args: str, env: dict[str, str] | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    """git with a deadline; a failure raises PlacementError with git's own words."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env,
                              timeout=GIT_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PlacementError(f"git {' '.join(args)} failed: {exc}") from exc
    if check and done.returncode != 0:
        raise PlacementError(f"git {' '.join(args)} failed: {(done.stderr or done.stdout).strip()}")
    return done


def workspace_name(source: Path) -> str:
    """`<name>-<8 hex>`: readable, and distinct for two repositories with the same name."""
    absolute = source.resolve()
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", absolute.name).strip("._-") or "repo"
    return f"{slug[:60]}-{hashlib.sha1(str(absolute).encode()).hexdigest()[:8]}"


def git_toplevel(path: Path) -> Path | None:
    """The top of the work tree containing `path`, or None outside git (or in a bare repo)."""
    done = git(path, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return Path(done.stdout.strip()).resolve()


@contextmanager
def exclusive(data_root: Path, name: str) -> Iterator[None]:
    """One client per workspace at a time: a second run would reset the clone under the first."""
    lock_dir = data_root / CLI_DIR
    lock_dir.mkdir(parents=True, exist_ok=True)
    with (lock_dir / f"{name}.lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise PlacementError(f"another `jervis run` is using {lock_dir / name}; wait for it to end") from exc
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def claim(source: Path, data_root: Path) -> Iterator[PlacedWorkspace]:
    """The workspace of `source`, placed and held for this client until the block ends."""
    top = git_toplevel(source.resolve()) or source.resolve()
    with exclusive(data_root.resolve(), workspace_name(top)):
        yield place(source, data_root)


def place(source: Path, data_root: Path) -> PlacedWorkspace:
    """Clone (or refresh) a repository, or copy a plain directory, into `<data-root>/cli/`."""
    source = source.resolve()
    data_root = data_root.resolve()
    notes: list[str] = []
    top = git_toplevel(source)
    if top is not None and top != source:
        notes.append(f"{source} is inside the repository {top}: the whole repository is used")
        source = top
    target = data_root / CLI_DIR / workspace_name(source)
    relative = target.relative_to(data_root).as_posix()
    if top is None:
        _copy(source, target, data_root)
        return PlacedWorkspace(source, target, relative, is_git=False, notes=notes)
    base = _refresh_clone(source, target)
    dirty = git(source, "--no-optional-locks", "status", "--porcelain").stdout.splitlines()
    if dirty:
        notes.append(f"{len(dirty)} uncommitted change(s) in {source} are not included: the run starts "
                     f"from your last commit ({base[:12]})")
    return PlacedWorkspace(source, target, relative, is_git=True, base=base, notes=notes)


def _copy(source: Path, target: Path, data_root: Path) -> None:
    """A fresh copy each run: the result of the previous run in this directory is replaced.
    The data root itself is skipped when it lies inside the directory (no copy into itself)."""
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)

    def skipped(directory: str, names: list[str]) -> list[str]:
        return [name for name in names if name in COPY_SKIP or Path(directory, name).resolve() == data_root]

    shutil.copytree(source, target, symlinks=True, ignore=skipped)


def _refresh_clone(source: Path, target: Path) -> str:
    """The clone at the user's HEAD, clean, on a branch named like the user's."""
    head = git(source, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).stdout.strip()
    if not head:
        raise PlacementError(f"{source} has no commit yet: commit something first")
    if not (target / ".git").is_dir():
        if target.exists():  # an earlier copy from when the directory was not a repository
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        git(target.parent, "clone", "--local", "--quiet", "--no-checkout", str(source), target.name)
    else:
        git(target, "fetch", "--quiet", str(source), "HEAD")
    branch = git(source, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.strip() or DETACHED_BRANCH
    git(target, "checkout", "--quiet", "--force", "-B", branch, head)
    git(target, "clean", "--quiet", "-ffdx")
    _configure_clone(source, target)
    return head


def _configure_clone(source: Path, target: Path) -> None:
    """Commits carry the user's identity, and a push (`--auto-push`) goes where the user's own
    pushes go: the clone's `origin` is the user's `origin` (else the repository itself)."""
    for key in ("user.name", "user.email"):
        value = git(source, "config", key, check=False).stdout.strip()
        if value:
            git(target, "config", key, value)
    origin = git(source, "remote", "get-url", "origin", check=False).stdout.strip()
    git(target, "remote", "set-url", "origin", origin or str(source))


def changes(workspace: PlacedWorkspace) -> Changes | None:
    """Files changed against the user's HEAD (committed or not, new files included) and their
    `git diff --stat`, read through a throwaway index so the clone's own index is untouched."""
    if not workspace.is_git or workspace.base is None or not (workspace.path / ".git").is_dir():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        try:
            git(workspace.path, "read-tree", "HEAD", env=env)
            git(workspace.path, "add", "--all", env=env)
            names = git(workspace.path, "diff", "--cached", "--name-only", workspace.base, env=env).stdout
            stat = git(workspace.path, "diff", "--cached", "--stat", workspace.base, env=env).stdout
        except PlacementError:
            return None
    return Changes([line for line in names.splitlines() if line], stat.rstrip())


def fetch_back(workspace: PlacedWorkspace, branch: str) -> FetchBack:
    """The run's branch into the user's repository, as a fetch (never a checkout). An existing
    branch is only fast-forwarded; otherwise the user gets the command to run."""
    source, clone = workspace.source, workspace.path
    if git(clone, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode != 0:
        return FetchBack(False, f"branch {branch} is not in the workspace {clone}: is --data-root the "
                                f"service's DATA_ROOT?")
    existed = git(source, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode == 0
    done = git(source, "fetch", "--quiet", str(clone), f"{branch}:{branch}", check=False)
    if done.returncode == 0:
        verb = "updated" if existed else "created"
        return FetchBack(True, f"branch {branch} {verb} in {source} (not checked out)")
    reason = (done.stderr or done.stdout).strip().splitlines()
    command = f"git -C {shlex.quote(str(source))} fetch {shlex.quote(str(clone))} +{branch}:{branch}"
    why = "already exists and is not a fast-forward" if existed else "could not be fetched"
    return FetchBack(False, f"branch {branch} {why} in {source}" + (f" ({reason[-1]})" if reason else ""),
                     command=command)
