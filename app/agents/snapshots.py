"""Content snapshots of a git workspace, so a failed agent step can be retried from where it began.

A retry must start from the working tree exactly as it was when the step first started (earlier
steps' uncommitted changes included), and a skipped step's changes must be discarded, without
disturbing the user's own git state. So a snapshot is only a *tree object*, written with a
temporary index: `.git/index` is copied into the git dir (the copy keeps its mtime, so git's
racy-clean check stays correct, and its stat data keeps `git add -A` fast), `git add -A` and
`git write-tree` run on the copy through `GIT_INDEX_FILE`, and the copy is deleted. `git add -A`
applies .gitignore, `.git/info/exclude` and the default global ignore file, and includes untracked files, so
the tree is "everything git would commit". Restoring reads the base tree into a second temporary
index and checks paths out of it with `checkout-index`. Neither ever writes `.git/index`, HEAD,
a branch, a ref, the stash or a commit; the only lasting traces are unreachable objects in the
object store and one small file per key under `<gitdir>/jervis/snapshots/`.

Every git command runs through `app.agents.safe_git`: the repository pinned where the service put
it, no system or user configuration, and no hook, filter, driver or textconv a workspace could name.

Because the base is recorded under a key before the agent starts, a restarted orchestrator finds
the same base again. The one caveat is git's own garbage collection: the snapshot objects are
unreachable, so `git gc` prunes them once they are older than `gc.pruneExpire` (two weeks by
default) and at once under `git gc --prune=now`; a restore then fails with `SnapshotError`
instead of restoring something else.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from app.agents.safe_git import UnsafeRepositoryError, has_git
from app.agents.snapshot_files import delete_added, read_key, still_present, write_atomically
from app.agents.snapshot_git import (
    OBJECT_ID,
    GitCommand,
    SnapshotError,
    decode_path,
    encode_paths,
    state_folder,
    temp_index,
)

__all__ = ["Change", "Snapshot", "SnapshotError", "UnsafeRepositoryError", "WorkspaceSnapshots"]

log = logging.getLogger(__name__)

KEY_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,200}")
GITLINK_MODE = "160000"
#: The same diff whatever the user's diff.* and color.* settings say.
DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/")


@dataclass(frozen=True)
class Snapshot:
    """The recorded base of a key: its tree, and whether this call recorded it."""

    tree: str
    created: bool


@dataclass(frozen=True)
class Change:
    """One entry of `git diff-tree --raw` between the base and the current tree."""

    status: str
    path: str
    old_mode: str
    new_mode: str


class WorkspaceSnapshots:
    """Record, compare and restore the working tree of a workspace without touching its index or refs."""

    def __init__(self, git: str = "git", timeout_seconds: float = 60.0) -> None:
        self._git = GitCommand(git, timeout_seconds)

    # ------------------------------------------------------------------ public API
    async def is_repository(self, workspace: Path) -> bool:
        """True only for a workspace with its own repository at its top (found there, never by
        looking upwards: a subdirectory would snapshot its whole repo). A repository whose git
        metadata the service refuses (`safe_git.pin`) is none, and the log says why."""
        if not has_git(workspace):
            return False
        try:
            await self._git.run(workspace, "rev-parse", "--git-dir")
        except UnsafeRepositoryError as exc:
            log.warning("no snapshots of %s: %s", workspace, exc)
            return False
        except (SnapshotError, OSError):
            return False
        return True

    async def ensure(self, workspace: Path, key: str) -> Snapshot:
        """The base recorded under `key`, recording the working tree now if there is none yet.

        Called before every attempt of a step: the first call fixes the base, retries and a
        restarted service get the same one back however the tree changed since.
        """
        _check_key(key)
        path = await self._key_file(workspace, key)
        recorded = read_key(path)
        if recorded is not None:
            return Snapshot(tree=recorded, created=False)
        tree = await self.current_tree(workspace)
        await asyncio.to_thread(write_atomically, path, tree + "\n")
        return Snapshot(tree=tree, created=True)

    async def recorded(self, workspace: Path, key: str) -> str | None:
        """The base recorded under `key`, or None; records nothing (a re-attached agent's step)."""
        _check_key(key)
        return read_key(await self._key_file(workspace, key))

    async def current_tree(self, workspace: Path) -> str:
        """The tree object of the working tree now: what `git add -A` would stage, written to the odb."""
        git_dir = await self._git_dir(workspace)
        async with temp_index(git_dir, seed=git_dir / "index") as index:
            # --ignore-errors: a path git cannot add (an embedded repository without a commit, an
            # unreadable file) is skipped with exit 1 instead of failing the whole snapshot.
            await self._git.run(workspace, "add", "-A", "--ignore-errors", index=index, ok_codes=(0, 1),
                                warn="git add skipped paths")
            tree = (await self._git.run(workspace, "write-tree", index=index)).decode().strip()
        if not OBJECT_ID.fullmatch(tree):
            raise SnapshotError(f"git write-tree printed {tree!r}, not a tree id")
        return tree

    async def restore(self, workspace: Path, base: str) -> list[str]:
        """Make every non-ignored path equal to `base`; returns the sorted paths it changed.

        Modified, deleted and type-changed paths are written back from the base tree first (a file
        standing where the base has a directory, or the reverse, is replaced by `checkout-index -f`).
        Paths added since are then deleted, unless the base's ignore rules, now restored, ignore
        them: a file that was ignored when the step began is not the step's work. Nested
        repositories (gitlinks) are left alone.
        """
        _check_object_id(base)
        changes = [c for c in await self._changes(workspace, base) if GITLINK_MODE not in (c.old_mode, c.new_mode)]
        rewritten = [c.path for c in changes if c.status != "A"]
        if rewritten:
            await self._checkout(workspace, base, rewritten)
        added = [c.path for c in changes if c.status == "A"]
        present = await asyncio.to_thread(still_present, workspace, added)  # the checkout replaced the others
        removed = await asyncio.to_thread(delete_added, workspace, await self._not_ignored(workspace, present))
        return sorted({*rewritten, *(set(added) - set(present)), *removed})

    async def restore_paths(self, workspace: Path, base: str, paths: list[str]) -> list[str]:
        """Put exactly `paths` back as they were in `base` (a forbidden file an agent wrote):
        written from the base tree where it has them (with their mode, a symlink as a symlink),
        deleted where it has not. Git's checkout never writes beyond a symlink, and a deletion
        removes a file or link itself, never anything through a symlinked directory. Returns the
        paths it put back or deleted."""
        _check_object_id(base)
        if not paths:
            return []
        # --literal-pathspecs: a forbidden name like `*.env` is a file name here, not a pattern.
        out = await self._git.run(workspace, "--literal-pathspecs", "ls-tree", "-r", "-z", "--name-only", base, "--",
                                  *paths)
        in_base = [entry for entry in decode_path(out).split("\0") if entry]
        restored = [path for path in paths if any(e == path or e.startswith(path + "/") for e in in_base)]
        if in_base:
            await self._checkout(workspace, base, in_base)
        removed = await asyncio.to_thread(delete_added, workspace, [path for path in paths if path not in restored])
        return sorted({*restored, *removed})

    async def diff(self, workspace: Path, base: str, *, max_chars: int = 12000) -> str:
        """Unified diff from the base to the working tree now, for a review; bounded to `max_chars`."""
        return await self.diff_between(workspace, base, None, max_chars=max_chars)

    async def diff_between(self, workspace: Path, old: str, new: str | None, *, max_chars: int = 12000) -> str:
        """Unified diff from tree `old` to tree `new` (None: the working tree now); bounded."""
        _check_object_id(old)
        if new is not None:
            _check_object_id(new)
        new = new or await self.current_tree(workspace)
        out = await self._git.run(workspace, "diff", *DIFF_OPTIONS, old, new, "--")
        return _bounded(out.decode(errors="replace"), max_chars, "diff")

    async def diff_stat(self, workspace: Path, base: str, *, max_chars: int = 2000) -> str:
        """`git diff --stat` from the base to the working tree now, with full paths; bounded to `max_chars`."""
        _check_object_id(base)
        current = await self.current_tree(workspace)
        out = await self._git.run(workspace, "diff", *DIFF_OPTIONS, "--stat=1000", "--stat-graph-width=40",
                                  base, current, "--")
        return _bounded(out.decode(errors="replace"), max_chars, "diff")

    async def read_base(self, workspace: Path, base: str, path: str, *, max_bytes: int = 1_000_000) -> bytes | None:
        """A file's content in the base tree; None when the base has no such file (or it is larger)."""
        _check_object_id(base)
        spec = f"{base}:{path}"
        size = await self._git.run(workspace, "cat-file", "-s", spec, ok_codes=(0, 128))
        if not size.strip().isdigit() or int(size) > max_bytes:
            return None
        return await self._git.run(workspace, "cat-file", "blob", spec)

    # ------------------------------------------------------------------ restore steps
    async def _changes(self, workspace: Path, base: str) -> list[Change]:
        """What differs between the base and the working tree now (no rename pairing: one path each)."""
        current = await self.current_tree(workspace)
        if current == base:
            return []
        out = await self._git.run(workspace, "diff-tree", "-r", "-z", "--raw", "--no-renames", base, current)
        return _parse_raw(decode_path(out))

    async def _checkout(self, workspace: Path, base: str, paths: list[str]) -> None:
        """Write `paths` from the base tree into the working tree, through a second temporary index."""
        git_dir = await self._git_dir(workspace)
        async with temp_index(git_dir, seed=None) as index:
            await self._git.run(workspace, "read-tree", base, index=index)
            await self._git.run(workspace, "checkout-index", "-f", "-z", "--stdin", index=index,
                                stdin=encode_paths(paths))

    async def _not_ignored(self, workspace: Path, paths: list[str]) -> list[str]:
        """`paths` minus those the ignore rules in the working tree now ignore (the real index is only read)."""
        ignored = await self.ignored(workspace, paths)
        return [path for path in paths if path not in ignored]

    async def ignored(self, workspace: Path, paths: list[str]) -> set[str]:
        """Those of `paths` the repository's ignore rules ignore now (tracked paths never are)."""
        if not paths:
            return set()
        out = await self._git.run(workspace, "check-ignore", "-z", "--stdin", stdin=encode_paths(paths),
                                  ok_codes=(0, 1))  # 1: none of them is ignored
        return set(filter(None, decode_path(out).split("\0")))

    # ------------------------------------------------------------------ git plumbing
    async def _git_dir(self, workspace: Path) -> Path:
        """The workspace's git dir as `safe_git.pin` checked it (`.git`, or a goal worktree's own
        folder in its main `.git/worktrees/`): our records and temporary indexes are written there."""
        return (await asyncio.to_thread(self._git.pin, workspace)).git_dir

    async def _key_file(self, workspace: Path, key: str) -> Path:
        return await asyncio.to_thread(state_folder, await self._git_dir(workspace), "snapshots") / key


# ---------------------------------------------------------------------- helpers
def _parse_raw(text: str) -> list[Change]:
    """`diff-tree -r -z --raw --no-renames`: `:<old mode> <new mode> <old> <new> <status>\\0<path>\\0` records."""
    fields = text.split("\0")
    changes: list[Change] = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(":"):
            continue
        old_mode, new_mode, _old, _new, status = meta[1:].split(" ")
        changes.append(Change(status=status[0], path=path, old_mode=old_mode, new_mode=new_mode))
    return changes


def _bounded(text: str, max_chars: int, what: str) -> str:
    """At most `max_chars` of `text` (whole lines where possible), then a line saying how much was cut."""
    if len(text) <= max_chars:
        return text
    cut = text.rfind("\n", 0, max_chars) + 1 or max_chars
    kept = text[:cut] if text[:cut].endswith("\n") else text[:cut] + "\n"
    return f"{kept}… ({what} truncated: {len(text) - cut} more characters)"


def _check_key(key: str) -> None:
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key) or key in (".", ".."):
        raise ValueError("snapshot key must be 1-200 characters of A-Z, a-z, 0-9, '.', '_', '-'")


def _check_object_id(base: str) -> None:
    if not isinstance(base, str) or not OBJECT_ID.fullmatch(base):
        raise ValueError("base must be a full lowercase tree id")
