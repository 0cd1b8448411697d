"""Files of `app.agents.snapshots` outside git: deleting what a step added (never through a
symlink out of the workspace), and the per-key snapshot records, written atomically."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from app.agents import confinement
from app.agents.snapshot_git import OBJECT_ID, SnapshotError

log = logging.getLogger(__name__)

#: A record holds one tree id (40 or 64 hex digits) and a newline.
MAX_KEY_BYTES = 128


def delete_added(workspace: Path, paths: Iterable[str]) -> list[str]:
    """Remove added files and symlinks, then the directories that left empty, up to (not including) the root."""
    root = workspace.resolve()
    removed: list[str] = []
    for path in paths:
        target = workspace / path
        if not inside(root, target.parent):
            log.warning("not deleting %s: its directory leads outside the workspace", path)
            continue
        with contextlib.suppress(FileNotFoundError):
            if target.is_dir() and not target.is_symlink():
                continue  # not a file: a nested repository or something git did not record as one path
            target.unlink()
            removed.append(path)
        prune_empty_parents(root, target.parent)
    return removed


def still_present(workspace: Path, paths: Iterable[str]) -> list[str]:
    """Added paths still there as files or symlinks: the checkout replaces an added file that stands where
    the base has a directory, or one below an added directory where the base has a file."""
    def present(path: str) -> bool:
        target = workspace / path
        leading = [workspace / parent for parent in reversed(Path(path).parents) if parent != Path(".")]
        real_dirs = all(p.is_dir() and not p.is_symlink() for p in leading)
        return real_dirs and (target.is_symlink() or target.is_file())
    return [path for path in paths if present(path)]


def prune_empty_parents(root: Path, folder: Path) -> None:
    while inside(root, folder) and folder.resolve() != root:
        try:
            folder.rmdir()
        except OSError:  # not empty (or already gone): stop climbing
            return
        folder = folder.parent


def inside(root: Path, path: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except OSError:
        return False


def read_key(path: Path) -> str | None:
    """The tree id recorded at `path`. The record lives in a git dir an agent may have written: a
    symlink standing there is not followed (SnapshotError, nothing of its target read or quoted)."""
    try:
        text = confinement.read_inside(path.parent, path.name, max_bytes=MAX_KEY_BYTES).decode("ascii").strip()
    except FileNotFoundError:
        return None
    except confinement.UnsafeReadError as exc:
        raise SnapshotError(f"snapshot record {path} was not read: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"snapshot record {path} is unreadable: {type(exc).__name__}") from None
    if not OBJECT_ID.fullmatch(text):
        raise SnapshotError(f"snapshot record {path} holds {text[:80]!r}, not a tree id")
    return text


def write_atomically(path: Path, text: str) -> None:
    """Temp file, fsync, rename: after a crash the record is either absent or whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
