"""Agent output as bounded lines: cut long lines, follow a growing log file, cap its size.

The local agent writes its output to a file (a pipe would die with the service, see
`local_process`), which the runner reads as it grows. Output is untrusted in size: a line over
asyncio's 64 KiB readline limit used to stop the reader, so lines are cut here with a note of what
was dropped, and a log file past `MAX_LOG_BYTES` is emptied once it has been read.

The follower works on one descriptor it opened itself (`LogFollower.open`: no symlink, a regular
file only): it reads, sizes and empties that file and nothing else, so even a log path that were
swapped for a link to someone else's file could not make it stream or truncate that file.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

#: Longer agent output lines are cut (they still reach the log, the stream and the tail, bounded).
MAX_LINE_CHARS = 4000
CHUNK_BYTES = 65536
#: A log file the follower has read past this size is emptied (the agent appends, so it carries on at 0).
MAX_LOG_BYTES = 8 * 1024 * 1024
#: At most this much of a log is read per poll (the rest comes on the next one).
READ_BYTES_PER_POLL = 4 * 1024 * 1024
#: How far back a re-attaching runner reads for the lines it replays.
REPLAY_BYTES = 65536


class LineCutter:
    """Bytes in, whole lines out, each cut to `max_chars`; an unfinished line waits for its end."""

    def __init__(self, max_chars: int = MAX_LINE_CHARS) -> None:
        self._max_chars = max_chars
        self._pending = b""
        self._dropped = 0

    def feed(self, chunk: bytes) -> list[str]:
        self._pending += chunk
        *complete, self._pending = self._pending.split(b"\n")
        lines = []
        for raw in complete:
            lines.append(self._cut(raw))
            self._dropped = 0
        if len(self._pending) > self._max_chars * 4:  # a line still going: keep its head, count the rest
            self._dropped += len(self._pending) - self._max_chars * 4
            self._pending = self._pending[: self._max_chars * 4]
        return lines

    def flush(self) -> list[str]:
        """The unterminated last line, if any (the writer has ended)."""
        if not self._pending and not self._dropped:
            return []
        line = self._cut(self._pending)
        self._pending, self._dropped = b"", 0
        return [line]

    def _cut(self, raw: bytes) -> str:
        line = raw.decode(errors="replace").rstrip()
        if len(line) <= self._max_chars and not self._dropped:
            return line
        return f"{line[: self._max_chars]} … (line cut at {self._max_chars} characters)"


class LogFollower:
    """Reads an agent's log file from an offset as the agent appends to it, through its own descriptor."""

    def __init__(self, fd: int, *, name: str = "agent log", max_chars: int = MAX_LINE_CHARS,
                 max_bytes: int = MAX_LOG_BYTES) -> None:
        self._fd: int | None = fd
        self.name = name
        self._cutter = LineCutter(max_chars)
        self._max_bytes = max_bytes
        self._offset = 0
        self.received = 0
        """Bytes `read` has taken so far (a partial line too): the progress watchdog's sign of output."""

    @classmethod
    def open(cls, path: Path, *, max_chars: int = MAX_LINE_CHARS, max_bytes: int = MAX_LOG_BYTES) -> LogFollower:
        """Follow the regular file `path` (created empty when missing). Read-write, since emptying
        it is `ftruncate` on this descriptor; `O_NOFOLLOW`: a symlink there is an OSError
        (ELOOP), never followed; anything but a regular file is refused (OSError)."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"{path} is not a regular file: not followed")
        return cls(fd, name=path.name, max_chars=max_chars, max_bytes=max_bytes)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> LogFollower:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def replay(self, last: int) -> list[str]:
        """The last `last` lines already in the file (read from at most `REPLAY_BYTES` back); the
        follower then goes on from the file's end. For a runner that re-attaches mid-run."""
        size = self._size()
        start = max(0, size - REPLAY_BYTES)
        lines = self._cutter.feed(self._read(start, size - start))
        self._offset = size
        if start > 0 and lines:
            lines = lines[1:]  # began inside a line
        return lines[-last:] if last else []

    def read(self) -> list[str]:
        """Complete lines written since the last read (an unfinished one waits)."""
        size = self._size()
        if size < self._offset:  # emptied behind our back: start over
            self._offset = 0
        data = self._read(self._offset, min(size - self._offset, READ_BYTES_PER_POLL))
        self._offset += len(data)
        self.received += len(data)
        lines = self._cutter.feed(data)
        if self._offset >= self._max_bytes and self._offset >= self._size():
            self._truncate()
        return lines

    def finish(self) -> list[str]:
        """Everything left once the writer has ended, the unterminated last line included."""
        lines = self.read()
        while self._offset < self._size():  # the writer has ended: the size no longer grows
            lines += self.read()
        return lines + self._cutter.flush()

    def _truncate(self) -> None:
        """Bytes the agent writes between our last read and this call are lost; that is the price
        of a bounded file the agent keeps appending to (it holds its descriptor with O_APPEND).
        Only the file this follower opened is emptied, through its descriptor."""
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, 0)
        except OSError as exc:
            log.warning("could not empty the agent log %s: %s", self.name, exc)
            return
        log.info("agent log %s passed %d bytes: emptied after reading", self.name, self._max_bytes)
        self._offset = 0

    def _size(self) -> int:
        return 0 if self._fd is None else os.fstat(self._fd).st_size

    def _read(self, offset: int, length: int) -> bytes:
        if length <= 0 or self._fd is None:
            return b""
        chunks: list[bytes] = []
        while length > 0:
            chunk = os.pread(self._fd, min(length, READ_BYTES_PER_POLL), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            length -= len(chunk)
        return b"".join(chunks)
