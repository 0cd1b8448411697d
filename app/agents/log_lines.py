"""Agent output as bounded lines: cut long lines, follow a growing log file, cap its size.

The local agent writes its output to a file (a pipe would die with the service, see
`local_process`), which the runner reads as it grows. Output is untrusted in size: a line over
asyncio's 64 KiB readline limit used to stop the reader, so lines are cut here with a note of what
was dropped, and a log file past `MAX_LOG_BYTES` is emptied once it has been read.
"""

from __future__ import annotations

import logging
import os
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
    """Reads an agent's log file from an offset as the agent appends to it."""

    def __init__(self, path: Path, *, max_chars: int = MAX_LINE_CHARS, max_bytes: int = MAX_LOG_BYTES) -> None:
        self.path = path
        self._cutter = LineCutter(max_chars)
        self._max_bytes = max_bytes
        self._offset = 0
        self.received = 0
        """Bytes `read` has taken so far (a partial line too): the progress watchdog's sign of output."""

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
        of a bounded file the agent keeps appending to (it holds its descriptor with O_APPEND)."""
        try:
            os.truncate(self.path, 0)
        except OSError as exc:
            log.warning("could not empty the agent log %s: %s", self.path, exc)
            return
        log.info("agent log %s passed %d bytes: emptied after reading", self.path.name, self._max_bytes)
        self._offset = 0

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def _read(self, offset: int, length: int) -> bytes:
        if length <= 0:
            return b""
        try:
            with self.path.open("rb") as handle:
                handle.seek(offset)
                return handle.read(length)
        except FileNotFoundError:
            return b""
