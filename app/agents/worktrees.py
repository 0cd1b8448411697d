"""Git worktrees for goals that run side by side, and merging their work back.

Goals of one wave start from the same content: the main workspace's tree when the wave begins
(uncommitted work of earlier waves included; nothing is committed before the user approves). That
tree becomes an unreachable *base commit*; each goal gets a linked worktree on a branch of its own
created from it, next to the workspace on the shared volume, so agents of different goals never
write the same files. After the wave each goal's tree becomes a commit on top of the base, and the
goals are merged one after another in plan order with `git merge-tree --write-tree` (git ≥ 2.38),
which needs no working tree: the main workspace is only written once, with the merged result.
A textual conflict leaves the merged result as it was before that goal and names the files.

Every command runs through `app.agents.safe_git` (the repository pinned, no program a workspace
names); a goal's worktree is used only while its `.git` file leads where `git worktree add` put it.
Nothing here touches the main workspace's index, HEAD or branches; the goals' branches and
worktrees are removed after the merge (`remove`), so only unreachable objects remain.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from app.agents.safe_git import WORKTREES_SUFFIX
from app.agents.snapshot_git import OBJECT_ID, GitCommand, SnapshotError, decode_path

__all__ = ["WORKTREES_SUFFIX", "GoalWorktrees", "MergeStep", "SnapshotError"]

#: Who the internal commits are by (never on a branch the user sees).
IDENTITY = ("user.name=Jervis", "user.email=jervis@localhost")


@dataclass(frozen=True)
class MergeStep:
    """One goal merged into the wave's result: the result after it, or the files that conflicted."""

    merged: str
    """The merged commit after this goal (unchanged from before it on a conflict)."""
    tree: str
    """Its tree: the workspace's content once the goals merged so far are applied."""
    conflicts: list[str]
    """Paths that conflicted; empty when the goal merged cleanly."""


class GoalWorktrees:
    """Create, merge and remove the worktrees of a wave's goals (git in the main workspace)."""

    def __init__(self, git: str = "git", timeout_seconds: float = 60.0) -> None:
        self._git = GitCommand(git, timeout_seconds)

    async def base_commit(self, main: Path, tree: str, *, message: str = "jervis: wave base") -> str:
        """An unreachable commit of `tree` (the wave's starting content), its parent the current HEAD
        when there is one. The same tree and HEAD give a new commit each time: callers record it."""
        _check(tree)
        head = await self._head(main)
        parents = ("-p", head) if head else ()
        return await self._commit_tree(main, tree, parents, message)

    async def create(self, main: Path, path: Path, branch: str, base: str) -> None:
        """A worktree at `path` on `branch` from commit `base`; an existing one is kept (a resumed
        goal goes on with its work)."""
        _check(base)
        if (path / ".git").exists():
            return
        if path.exists():  # a half-created worktree of a killed process
            await asyncio.to_thread(shutil.rmtree, path)
        await self._git.run(main, "worktree", "prune")
        path.parent.mkdir(parents=True, exist_ok=True)
        await self._git.run(main, "worktree", "add", "--force", "-B", branch, str(path), base)

    async def merge(self, main: Path, merged: str, base: str, tree: str, message: str) -> MergeStep:
        """Merge a goal's `tree` (worked from `base`) into `merged`: the new merged commit and tree,
        or the conflicting paths with `merged` unchanged."""
        for object_id in (merged, base, tree):
            _check(object_id)
        goal = await self._commit_tree(main, tree, ("-p", base), message)
        out = await self._git.run(main, "merge-tree", "--write-tree", "--name-only", "--no-messages", merged, goal,
                                  ok_codes=(0, 1))
        lines = [line for line in decode_path(out).split("\n") if line]
        if not lines or not OBJECT_ID.fullmatch(lines[0]):
            raise SnapshotError(f"git merge-tree printed {out[:200]!r}")
        if len(lines) > 1:  # exit 1: the tree has conflict markers; the names follow it
            return MergeStep(merged=merged, tree=await self.tree_of(main, merged), conflicts=sorted(set(lines[1:])))
        result = await self._commit_tree(main, lines[0], ("-p", merged, "-p", goal), message)
        return MergeStep(merged=result, tree=lines[0], conflicts=[])

    async def tree_of(self, main: Path, commit: str) -> str:
        out = await self._git.run(main, "rev-parse", f"{commit}^{{tree}}")
        return _checked(out.decode().strip())

    async def remove(self, main: Path, path: Path, branch: str) -> None:
        """Remove the worktree and its branch; whatever is already gone is fine."""
        await self._git.run(main, "worktree", "remove", "--force", "--force", str(path), ok_codes=(0, 128))
        if path.exists():
            await asyncio.to_thread(shutil.rmtree, path, True)
        await self._git.run(main, "worktree", "prune")
        await self._git.run(main, "branch", "-D", branch, ok_codes=(0, 1))
        with contextlib.suppress(OSError):  # the folder of the workspace's worktrees, once it is empty
            path.parent.rmdir()

    async def _head(self, main: Path) -> str | None:
        out = await self._git.run(main, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", ok_codes=(0, 1))
        head = out.decode().strip()
        return head if OBJECT_ID.fullmatch(head) else None

    async def _commit_tree(self, main: Path, tree: str, parents: tuple[str, ...], message: str) -> str:
        out = await self._git.run(main, "commit-tree", tree, *parents, "-m", message, settings=IDENTITY)
        return _checked(out.decode().strip())


def _check(object_id: str) -> None:
    if not OBJECT_ID.fullmatch(object_id):
        raise SnapshotError(f"not an object id: {object_id!r}")


def _checked(object_id: str) -> str:
    _check(object_id)
    return object_id
