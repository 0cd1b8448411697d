"""File access for detection that never raises and never blocks: an unreadable, odd or huge file is
simply no signal, and neither is a symlink in place of a file that is read (an agent's link to a
file the sandbox hid gives its content to nobody)."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

#: Larger files are not read: a build file that size is no build file.
MAX_FILE_BYTES = 1 << 20


def is_file(path: Path) -> bool:
    """A regular file (after symlinks); unreadable or odd entries (sockets, FIFOs) are not."""
    try:
        return path.is_file()
    except OSError:
        return False


def is_dir(path: Path) -> bool:
    """A directory (after symlinks); False instead of an error."""
    try:
        return path.is_dir()
    except OSError:
        return False


def read_bytes(path: Path, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """At most `limit` bytes of a regular file, or None when it cannot be read or is larger."""
    data = _read_regular(path, limit + 1)
    return None if data is None or len(data) > limit else data


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str | None:
    """A small regular file as text (bad bytes replaced), or None when it cannot be read."""
    data = read_bytes(path, limit)
    return None if data is None else data.decode("utf-8", errors="replace")


def read_head(path: Path, limit: int) -> str | None:
    """The first `limit` bytes of a regular file as text, however long the file is."""
    data = _read_regular(path, limit)
    return None if data is None else data.decode("utf-8", errors="replace")


def _read_regular(path: Path, limit: int) -> bytes | None:
    """Up to `limit` bytes of `path` when it is a regular file itself: a symlink there (the
    workspace is the agents') is not followed, a FIFO cannot block (`O_NONBLOCK`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read(limit) if stat.S_ISREG(os.fstat(handle.fileno()).st_mode) else None
    except OSError:
        return None


def read_json(path: Path) -> Any:
    """Parsed JSON, or None when the file is missing, unreadable or not JSON."""
    text = read_text(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def has_ini_section(path: Path, section: str) -> bool:
    """A `[section]` header line; a line match, because configparser gives up on odd files."""
    text = read_text(path)
    return text is not None and re.search(rf"^\[{re.escape(section)}\][ \t]*$", text, re.MULTILINE) is not None
