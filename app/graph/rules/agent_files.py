"""Reading back a workspace file an agent could have written: never through a link it planted.

After an agent ran, any file in its workspace may be a symlink to something the sandbox hid
(another client's credentials, the service's configuration). The service runs outside the
sandbox, so a plain `open()` of such a path would hand the target to the evaluation, the LLM,
the events and the logs. Every read here goes through `confinement.read_text_inside` (no link
followed anywhere on the way, regular files only, size-capped), and tells a file that was
refused (a link, a FIFO, a device: the caller says so and never uses anything of it) apart from
one that is only gone or too large (no content, nothing to say: as before).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from app.agents import confinement


@dataclass(frozen=True)
class AgentFile:
    text: str | None
    """The content; None when it was not read (see `refused`)."""
    refused: str | None = None
    """Why a file standing there was not read (a symlink on its way, not a regular file); None when it
    was read, is not there, is unreadable or is only larger than the reader allows."""


def read(root: Path, rel: str, *, max_bytes: int) -> AgentFile:
    """`root/rel` as text when it is a regular file reached without a link and at most `max_bytes`."""
    try:
        return AgentFile(confinement.read_text_inside(root, rel, max_bytes=max_bytes))
    except confinement.UnsafeReadError as exc:
        return AgentFile(None, None if _only_too_large(root, rel, max_bytes) else str(exc))
    except OSError:  # gone, a permission, a directory on the way that is not one: no content
        return AgentFile(None)


def _only_too_large(root: Path, rel: str, max_bytes: int) -> bool:
    """No link on the way and a regular file: refused for its size alone."""
    path, info = root, None
    for part in Path(rel).parts:
        path = path / part
        try:
            info = os.lstat(path)
        except OSError:
            return False
        if stat.S_ISLNK(info.st_mode):
            return False
    return info is not None and stat.S_ISREG(info.st_mode) and info.st_size > max_bytes
