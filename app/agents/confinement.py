"""Keeping the service's own file operations inside a workspace, and refusing workspaces whose
symlinks would carry an agent's writes out of it.

A workspace is content the service does not control: a repository may commit a symlink, and an
agent may create one. Every file the service writes or deletes there goes through the helpers
below, which never follow a symlink out of the workspace: a directory on the way must resolve
inside it, a symlink standing where a file is written is replaced rather than written through,
and deleting a symlink removes the link, never its target. Symlinks that stay inside the
workspace are fine. `escaping_links` finds the ones that do not, for the check before an agent
starts (`WorkspaceManager.check_links`).

What the service reads back from a workspace after an agent ran (its result, the files it changed,
a design document) is untrusted input like a request body: `read_inside` opens it without
following a symlink anywhere on the way, refuses anything but a regular file, and caps its size.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

#: The service's own folder on DATA_ROOT (the runner's state, the relay's sockets, the test tools): no
#: workspace may lead into it (`WorkspaceManager.resolve`), and every sandbox hides it.
SERVICE_DIR = Path(".orchestrator")
#: Escaping links named in one error message; the rest are counted.
NAMED_LINKS = 5


class WorkspaceEscapeError(RuntimeError):
    """A path in a workspace leads outside it through a symlink; nothing was written there."""


class UnsafeReadError(OSError):
    """A file the service reads back from a workspace is a symlink (or has one on its way), is
    not a regular file, or is larger than the reader allows: nothing was read."""


@dataclass(frozen=True)
class EscapingLink:
    """A symlink in a workspace whose target resolves outside it."""

    path: str
    """Relative to the workspace, POSIX separators."""
    target: Path
    """Where it resolves to (it may not exist)."""
    is_dir: bool

    def __str__(self) -> str:
        return f"{self.path} -> {self.target}"


def inside(root: Path, path: Path) -> bool:
    """`path`, with every symlink on it resolved, is `root` or below it."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # unreadable, or a symlink loop: nothing to write through
        return False


def confined_dir(root: Path, rel: str | Path) -> Path:
    """`root/rel` as a directory inside `root`, created where missing. Each existing part must
    resolve inside `root` (a symlink pointing inside is followed); else WorkspaceEscapeError."""
    folder = root
    for part in Path(rel).parts:
        folder = folder / part
        if not folder.exists() and not folder.is_symlink():
            folder.mkdir()
        if not inside(root, folder) or not folder.is_dir():
            raise WorkspaceEscapeError(f"{Path(rel).as_posix()}: {folder.relative_to(root).as_posix()} leads outside "
                                       f"the workspace or is not a directory (symlink?)")
    return folder


def own_dir(root: Path, name: str) -> Path:
    """`root/name` as a real directory of the service's own (`.jervis/`): a symlink standing
    there is removed (the link, not its target) and a real directory made in its place."""
    folder = root / name
    if folder.is_symlink():
        folder.unlink()
    folder.mkdir(exist_ok=True)
    return folder


def write_text(root: Path, rel: str | Path, text: str) -> Path:
    """Write `root/rel` whole: a temporary file in the confined directory renamed over the name,
    so a symlink standing there is replaced, never written through."""
    rel = Path(rel)
    folder = confined_dir(root, rel.parent) if rel.parent != Path(".") else root
    target = folder / rel.name
    temporary = folder / f".{rel.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    # O_EXCL never opens an existing name (nor a symlink); 0o666 less the umask, like open() would,
    # since an agent running as another user must read what is written here.
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return target


def remove_file(root: Path, rel: str | Path) -> bool:
    """Delete `root/rel` (a file, or a symlink itself) when its directory resolves inside `root`;
    True when something was removed. A directory is left alone."""
    target = root / rel
    if not inside(root, target.parent):
        return False
    if target.is_dir() and not target.is_symlink():
        return False
    try:
        target.unlink()
    except FileNotFoundError:
        return False
    return True


def remove_tree(root: Path, rel: str | Path) -> None:
    """Delete the directory `root/rel` and everything in it; a symlink there is removed itself
    (its target untouched). `shutil.rmtree` never follows symlinks below it."""
    target = root / rel
    if target.is_symlink():
        target.unlink()
    elif target.is_dir() and inside(root, target.parent):
        shutil.rmtree(target, ignore_errors=True)


def remove_empty_dir(root: Path, rel: str | Path) -> None:
    """Remove `root/rel` when it is a real, empty directory inside `root`."""
    target = root / rel
    if target.is_dir() and not target.is_symlink() and inside(root, target.parent):
        with contextlib.suppress(OSError):
            target.rmdir()


def escaping_links(workspace: Path) -> list[EscapingLink]:
    """Every symlink in the workspace whose target resolves outside it, in path order.
    Symlinks are not followed while walking; `.git/` is git's own and not walked (a `.git` that
    is itself a symlink is checked). A symlink loop leads nowhere and is no escape."""
    root = workspace.resolve()
    found: list[EscapingLink] = []
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            if entry.is_symlink():
                try:
                    target = path.resolve()
                except (OSError, RuntimeError):
                    continue
                if not target.is_relative_to(root):
                    found.append(EscapingLink(path.relative_to(root).as_posix(), target, target.is_dir()))
            elif entry.is_dir(follow_symlinks=False) and not (folder == root and entry.name == ".git"):
                pending.append(path)
    return sorted(found, key=lambda link: link.path)


def describe(links: list[EscapingLink]) -> str:
    """The first few links, and how many more, for an error message."""
    named = ", ".join(str(link) for link in links[:NAMED_LINKS])
    more = f" and {len(links) - NAMED_LINKS} more" if len(links) > NAMED_LINKS else ""
    return named + more


def read_inside(root: Path, rel: str | Path, *, max_bytes: int) -> bytes:
    """The bytes of the regular file `root/rel`, read without following any symlink on the way:
    each directory is opened relative to the last with `O_NOFOLLOW`, and so is the file (with
    `O_NONBLOCK`, so a FIFO planted there cannot block the reader). `root` itself is the
    service's own path. FileNotFoundError when it is not there; UnsafeReadError for a link, a
    non-regular file, a `..` or absolute `rel`, or more than `max_bytes`."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        raise UnsafeReadError(f"{rel}: not a relative path inside the workspace")
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = _open_no_link(part, os.O_RDONLY | os.O_DIRECTORY, folder, rel)
            os.close(folder)
            folder = inner
        fd = _open_no_link(parts[-1], os.O_RDONLY | os.O_NONBLOCK, folder, rel)
    finally:
        os.close(folder)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeReadError(f"{rel}: not a regular file")
        if info.st_size > max_bytes:
            raise UnsafeReadError(f"{rel}: {info.st_size} bytes, more than the {max_bytes} allowed")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:  # grew while we read
        raise UnsafeReadError(f"{rel}: more than the {max_bytes} bytes allowed")
    return data


def read_text_inside(root: Path, rel: str | Path, *, max_bytes: int) -> str:
    """`read_inside` decoded as UTF-8 (undecodable bytes replaced: the content is untrusted)."""
    return read_inside(root, rel, max_bytes=max_bytes).decode("utf-8", errors="replace")


def _open_no_link(name: str, flags: int, folder: int, rel: str | Path) -> int:
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a symlink (or a file) where a directory/file was
            raise UnsafeReadError(f"{rel}: {name} is a symlink or not what it should be; not followed") from exc
        raise
