"""Helpers of `app.agents.snapshots` around git: object ids, temporary indexes inside the git dir,
and paths as git prints them. The commands themselves run through `app.agents.safe_git`, which
pins the repository and keeps every program a workspace could name from running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

from app.agents.safe_git import TEMP_INDEX_SETTINGS, GitCommand, SnapshotError, UnsafeRepositoryError

__all__ = ["OBJECT_ID", "STATE_DIR", "TEMP_INDEX_SETTINGS", "GitCommand", "SnapshotError", "UnsafeRepositoryError",
           "copy_if_exists", "decode_path", "encode_paths", "state_folder", "temp_index"]

OBJECT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
"""A full SHA-1 or SHA-256 object name."""
#: Our folder inside the git dir: snapshot records and temporary indexes.
STATE_DIR = "jervis"


@contextlib.asynccontextmanager
async def temp_index(git_dir: Path, *, seed: Path | None) -> AsyncIterator[Path]:
    """A private index file inside the git dir, seeded from `seed` when it exists; always removed."""
    folder = state_folder(git_dir)
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


def state_folder(git_dir: Path, *parts: str) -> Path:
    """`<git dir>/jervis/<parts>`, created; a symlink on the way (which would carry the service's
    records and indexes elsewhere) is refused before anything is created through it."""
    folder = git_dir
    for part in (STATE_DIR, *parts):
        folder = folder / part
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise UnsafeRepositoryError(f"{folder} is a symlink or not a directory; the service keeps its "
                                        "snapshot records and temporary indexes only in its own folder")
        folder.mkdir(exist_ok=True)
    return folder


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
