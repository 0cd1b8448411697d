"""The progress watchdog: an agent that says nothing and changes nothing for `AGENT_STALL_SECONDS` is stuck.

A hung agent (a dead connection, a prompt nobody answers, a model looping without output) was
waited for until its whole timeout, up to half an hour per attempt. Progress is either output
(the runner calls `output()` for every new line or chunk it reads) or a change in the workspace.

The workspace check is a fingerprint of file metadata, not contents: a breadth-first walk
(`os.scandir`, symlinks not followed) over at most `MAX_ENTRIES` entries, skipping `.git` (git's
bookkeeping, large, and not the agent's work) and `.jervis` (hand-over files and the local
agent's log, which counts as output anyway). Every entry's (path, size, mtime) goes into an
order-independent sum of hashes: writing a file changes its mtime, creating, deleting or
renaming one changes its directory's mtime and the entry set. That is one stat per entry (a few
ms per thousand files), done in a worker thread, only while the agent is silent and at most every
`SAMPLE_SECONDS` (a quarter of the stall time when that is shorter); the stall is decided only
after one more sample, so a change made just before it still counts. A tree larger than the cap
is seen in part (its shallowest entries): output remains the main sign of life.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from pathlib import Path

from app.agents.base import AgentJob

#: Directories (at any depth) that are not the agent's progress.
SKIPPED_DIRS = frozenset({".git", ".jervis"})
#: At most this many entries are looked at per sample (a repository of thousands of files fits).
MAX_ENTRIES = 50_000
#: The workspace is sampled at most this often while the agent is silent.
SAMPLE_SECONDS = 5.0

Fingerprint = tuple[int, int]


def workspace_fingerprint(root: Path, *, max_entries: int = MAX_ENTRIES) -> Fingerprint:
    """(entries seen, sum of their hashes): equal fingerprints mean no file was written, created,
    deleted or renamed in between (see the module doc for what is skipped). Blocking."""
    total = count = 0
    pending: deque[str] = deque([str(root)])
    while pending and count < max_entries:
        directory = pending.popleft()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if count >= max_entries:
                        break
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                        if is_dir and entry.name in SKIPPED_DIRS:
                            continue
                        stat = entry.stat(follow_symlinks=False)
                    except OSError:  # gone meanwhile: its directory's mtime tells
                        continue
                    count += 1
                    total = (total + hash((entry.path, stat.st_size, stat.st_mtime_ns))) & 0xFFFF_FFFF_FFFF_FFFF
                    if is_dir:
                        pending.append(entry.path)
        except OSError:  # unreadable or removed directory
            continue
    return count, total


class StallWatch:
    """When an agent step has shown no sign of life for `seconds` (0: never). The clock starts at
    `start()`: a re-attached agent gets the full stall time from the moment it is watched again."""

    def __init__(self, workspace: Path, seconds: float, *, sample_seconds: float = SAMPLE_SECONDS) -> None:
        self.workspace = workspace
        self.seconds = seconds
        self._sample_seconds = min(sample_seconds, seconds / 4)
        self._last_progress = time.monotonic()
        self._sampled_at = self._last_progress
        self._fingerprint: Fingerprint | None = None

    @classmethod
    def for_job(cls, job: AgentJob, seconds: float) -> StallWatch:
        """Only coding-agent steps are watched: tests and git steps have their own limits."""
        return cls(job.workspace, seconds if job.mode == "agent" else 0.0)

    @property
    def enabled(self) -> bool:
        return self.seconds > 0

    @property
    def started(self) -> bool:
        return self._fingerprint is not None

    async def start(self) -> None:
        """Start the clock and take the workspace's baseline."""
        if self.enabled:
            self._fingerprint = await self._sample()
            self._last_progress = self._sampled_at = time.monotonic()

    def output(self) -> None:
        """The agent printed something (may be called from a log-reading thread)."""
        self._last_progress = time.monotonic()

    async def stalled(self) -> bool:
        """True once nothing happened for `seconds`; samples the workspace when one is due."""
        if not self.enabled or self._fingerprint is None:
            return False
        now = time.monotonic()
        due = now - self._last_progress >= self.seconds
        silent_long_enough = now - max(self._last_progress, self._sampled_at) >= self._sample_seconds
        if not due and not silent_long_enough:
            return False
        current = await self._sample()
        self._sampled_at = time.monotonic()
        if current != self._fingerprint:
            self._fingerprint = current
            self._last_progress = self._sampled_at
            return False
        return due

    def summary(self) -> str:
        return f"Stalled: no output and no change in the workspace for {self.seconds:g} s"

    async def _sample(self) -> Fingerprint:
        return await asyncio.to_thread(workspace_fingerprint, self.workspace)
