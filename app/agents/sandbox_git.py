"""What of a workspace's git the sandbox binds, and how: read-only.

The service's own git (snapshots, worktrees, the commit) runs outside the sandbox on the same
repository, so the agent gets no writable git directory: its `.git`, and a parallel goal's
linked worktree's main git directory, are bound read-only over the writable workspace.
"""

from __future__ import annotations

import logging
from pathlib import Path

from app.agents.worktrees import WORKTREES_SUFFIX

log = logging.getLogger(__name__)


def read_only_git(workspace: Path) -> list[str]:
    """bwrap arguments binding the workspace's git metadata read-only over its writable bind: its
    `.git` (a directory, or a goal's worktree's `gitdir:` file) and a linked worktree's git
    directory. The agent reads git (status, diff, log) but cannot plant what the service's own
    git would run outside the sandbox (a `commondir`, hooks, config, attributes, alternates), and
    a mount point cannot be renamed or replaced from inside."""
    dot_git = workspace / ".git"
    bound = [dot_git] if not dot_git.is_symlink() and (dot_git.is_dir() or dot_git.is_file()) else []
    argv: list[str] = []
    for path in [*bound, *worktree_git_dirs(workspace)]:
        argv += ["--ro-bind", str(path), str(path)]
    return argv


def worktree_git_dirs(workspace: Path) -> list[Path]:
    """The git directory a linked worktree (a parallel goal's, `<main>.jervis-goals/<goal>`) keeps
    outside itself: its main workspace's `.git`, which holds the objects, refs and the worktree's
    own HEAD and index. Only that one: a `.git` file an agent rewrote to point anywhere else
    gets nothing bound (git then fails inside, and nothing outside is opened to the agent)."""
    dot_git = workspace / ".git"
    if dot_git.is_symlink() or not dot_git.is_file() or not workspace.parent.name.endswith(WORKTREES_SUFFIX):
        return []
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace")[:4096].strip()
        if not text.startswith("gitdir:"):
            return []
        git_dir = (workspace / text.removeprefix("gitdir:").strip()).resolve()
        common_file = git_dir / "commondir"
        common = (git_dir / common_file.read_text(encoding="utf-8").strip()).resolve() if common_file.is_file() \
            else git_dir
    except (OSError, RuntimeError):
        return []
    main = workspace.parent.with_name(workspace.parent.name.removesuffix(WORKTREES_SUFFIX))
    if common != (main / ".git").resolve() or not common.is_dir() or not git_dir.is_relative_to(common):
        log.warning("worktree %s: its git directory %s is not its main workspace's: not bound", workspace, common)
        return []
    return [common]
