"""`.jervis/result.json`, the file the orchestrator judges a step from: ours written atomically and
never through a symlink an agent planted, a stale one removed, an agent's own one read."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .common import JERVIS_DIR, RESULT_FILE


def write_result(workspace: Path, result: Mapping[str, Any]) -> None:
    """Write `.jervis/result.json` atomically (a reader never sees half a file), never through a
    symlink: an agent may have put one where `.jervis/` or a file in it stood."""
    jervis = own_dir(workspace, JERVIS_DIR)
    temporary = jervis / f".{RESULT_FILE}.{os.getpid()}.tmp"
    temporary.unlink(missing_ok=True)  # a leftover, or a link planted under this name: the name goes
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(result, indent=2, ensure_ascii=False))
    os.replace(temporary, jervis / RESULT_FILE)  # replaces a symlink named result.json, not its target


def own_dir(workspace: Path, name: str) -> Path:
    """`workspace/name` as a real directory: a symlink standing there is removed (the link, never
    its target) and a directory made in its place."""
    folder = workspace / name
    if folder.is_symlink():
        folder.unlink()
    folder.mkdir(exist_ok=True)
    return folder


def drop_stale_result(workspace: Path) -> None:
    """Remove a result left by an earlier run, unless `.jervis/` is a symlink (never delete through one)."""
    jervis = workspace / JERVIS_DIR
    if not jervis.is_symlink():
        (jervis / RESULT_FILE).unlink(missing_ok=True)


def read_own_result(workspace: Path) -> dict[str, Any] | None:
    """The agent's own `.jervis/result.json`, if it wrote a valid one."""
    try:
        value = json.loads((workspace / JERVIS_DIR / RESULT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
