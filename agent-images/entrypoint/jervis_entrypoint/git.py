"""Running git on the workspace safely (its repository pinned, none of the workspace's hooks,
fsmonitor or submodule recursion: `safe_git`; no prompts, no optional locks while an agent works),
and the git steps the modes share."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from .safe_git import pinned_env, settings_args

GIT_TIMEOUT = 120.0
#: How far back `find_commit` looks for a trailer.
TRAILER_DEPTH = 50


def git(workspace: Path, *args: str, timeout: float = GIT_TIMEOUT, read_only: bool = False,
        env: Mapping[str, str] | None = None, input_text: str | None = None, raw_paths: bool = False,
        ) -> subprocess.CompletedProcess[str]:
    """Run git on the workspace. `safe.directory` because the volume may belong to another uid;
    read-only calls take no optional locks, so `status` never rewrites the index under an agent.
    `env` adds variables (a temporary index); `input_text` is fed to stdin (else /dev/null);
    `raw_paths` decodes and encodes with surrogateescape, so a path git prints that is not UTF-8
    goes back to git unchanged (such text must not reach result.json: see `printable`)."""
    environment = {**pinned_env(workspace), "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    if read_only:
        environment["GIT_OPTIONAL_LOCKS"] = "0"
    return subprocess.run(
        # hooks and fsmonitor programs of the workspace's config are the agent's: never run them here
        ["git", *settings_args(), *args],
        cwd=workspace, env=environment, capture_output=True, text=True,
        encoding="utf-8" if raw_paths else None, errors="surrogateescape" if raw_paths else "replace",
        timeout=timeout, input=input_text, stdin=subprocess.DEVNULL if input_text is None else None, check=False,
    )


class GitError(RuntimeError):
    """A git command failed; the message carries git's own stderr."""


def git_ok(workspace: Path, *args: str, timeout: float = GIT_TIMEOUT, env: Mapping[str, str] | None = None,
           input_text: str | None = None, raw_paths: bool = False) -> str:
    """stdout of a git command that must succeed."""
    try:
        done = git(workspace, *args, timeout=timeout, env=env, input_text=input_text, raw_paths=raw_paths)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(printable(f"git {' '.join(args)}: {exc}")) from exc
    if done.returncode != 0:
        raise GitError(printable(f"git {' '.join(args)}: {(done.stderr or done.stdout).strip()}"))
    return done.stdout


def printable(text: str) -> str:
    """`text` without lone surrogates (a path that is not UTF-8), which JSON output cannot encode."""
    return text.encode("utf-8", errors="replace").decode("utf-8")


def is_git_repo(workspace: Path) -> bool:
    """True only when the workspace is the top level of a work tree (paths are then repo-relative)."""
    try:
        done = git(workspace, "rev-parse", "--show-toplevel", read_only=True)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and Path(done.stdout.strip()).resolve() == workspace.resolve()


def switch_branch(workspace: Path, branch: str) -> None:
    """Check out `branch`, creating it from HEAD if missing (local changes travel along)."""
    current = git_ok(workspace, "rev-parse", "--abbrev-ref", "HEAD").strip()
    if current == branch:
        return
    if git(workspace, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").returncode == 0:
        git_ok(workspace, "checkout", branch)
    else:
        git_ok(workspace, "checkout", "-b", branch)


def find_commit(workspace: Path, trailer: str) -> str | None:
    """The sha of a commit among the last 50 whose message has `trailer` as a line."""
    return find_commits(workspace, [trailer]).get(trailer)


def find_commits(workspace: Path, trailers: list[str], depth: int = TRAILER_DEPTH) -> dict[str, str]:
    """Each of `trailers` found as a line of a message among the last `depth` commits -> the newest such sha."""
    wanted, found = set(trailers), dict[str, str]()
    log_text = git_ok(workspace, "log", "-n", str(depth), "--format=%H%x00%B%x01")
    for record in log_text.split("\x01"):
        sha, _, body = record.strip().partition("\x00")
        for line in body.splitlines() if sha else ():
            if line.strip() in wanted:
                found.setdefault(line.strip(), sha)
    return found


def identity_args(workspace: Path) -> list[str]:
    """A fallback identity when git's configuration has none (a fresh pod; git refuses to commit
    without one). GIT_AUTHOR_*/GIT_COMMITTER_* in the pod's environment still take precedence."""
    args: list[str] = []
    for key, fallback in (("user.name", "Jervis"), ("user.email", "jervis@localhost")):
        if not git(workspace, "config", key).stdout.strip():
            args += ["-c", f"{key}={fallback}"]
    return args
