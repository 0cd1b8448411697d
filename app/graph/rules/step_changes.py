"""A step's changes to the workspace: its starting point, its diff, and undoing it.

Every step records the workspace's content when it first starts (a git tree, see
`app/agents/snapshots.py`); a retry, a skip, a replan or a stop puts the workspace back there,
so a new attempt starts from the same state as the first and only finished work is ever
offered for commit. Workspaces that are not the top of a git repository have no snapshot: a
retry then works on top of the failed attempt (the report says nothing was undone).
Snapshot trouble never fails a run: it is logged and the step goes on without an undo.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from app.agents.snapshots import SnapshotError, WorkspaceSnapshots

log = logging.getLogger(__name__)

DIFF_CHARS = 12_000
STAT_CHARS = 1_500


def run_base(results: Sequence[Mapping[str, Any]]) -> str | None:
    """The workspace before the run's first step: the earliest step's recorded base tree (the
    diff against it is the whole run's change)."""
    based = [r for r in results if r.get("base_tree")]
    first = min(based, key=lambda r: (r.get("goal_index", 0), r["step_index"], r.get("attempt", 1)), default=None)
    return str(first["base_tree"]) if first else None


def snapshot_key(thread_id: str, goal_index: int, step_index: int, revision: int) -> str:
    """One key per step of one plan revision; every attempt of the step shares it."""
    return f"{thread_id}-g{goal_index}-s{step_index}-r{revision}"


async def begin_step(snapshots: WorkspaceSnapshots, workspace: Path, key: str, *, reset: bool = True) -> str | None:
    """Called just before a new agent process or Job starts: the step's base tree (recorded on
    the first attempt, found again on later ones or after a restart) with the workspace reset
    to it (`reset` False: a retry that fixes the failed attempt's change keeps it). None when
    the workspace has no snapshot."""
    try:
        if not await snapshots.is_repository(workspace):
            return None
        snapshot = await snapshots.ensure(workspace, key)
        if not snapshot.created and reset:
            undone = await snapshots.restore(workspace, snapshot.tree)
            if undone:
                log.info("workspace reset to the step's start (%d path(s)): %s", len(undone), ", ".join(undone[:10]))
        return snapshot.tree
    except SnapshotError as exc:
        log.warning("no snapshot of %s, the step cannot be undone: %s", workspace, exc)
        return None


async def recorded_base(snapshots: WorkspaceSnapshots, workspace: Path, key: str) -> str | None:
    """The base an earlier process recorded (re-attached agents never ran `begin_step` here)."""
    try:
        return await snapshots.recorded(workspace, key)
    except SnapshotError as exc:
        log.warning("could not read the step's snapshot: %s", exc)
        return None


async def discard(snapshots: WorkspaceSnapshots, workspace: Path, base: str | None) -> list[str]:
    """Undo the step: the workspace as it was before the step's first attempt (idempotent)."""
    if not base:
        return []
    try:
        return await snapshots.restore(workspace, base)
    except SnapshotError as exc:
        log.warning("could not undo the step's changes in %s: %s", workspace, exc)
        return []


async def revert_paths(snapshots: WorkspaceSnapshots, workspace: Path, base: str | None, paths: list[str]) -> list[str]:
    """Put `paths` back as they were before the step (deleting those that did not exist); the
    paths it put back, [] without a base or when git fails (logged)."""
    if not base or not paths:
        return []
    try:
        return await snapshots.restore_paths(workspace, base, paths)
    except SnapshotError as exc:
        log.warning("could not put %s back as before the step: %s", ", ".join(paths[:10]), exc)
        return []


async def base_content(snapshots: WorkspaceSnapshots, workspace: Path, base: str | None, path: str) -> str | None:
    """A file as it was before the step; None when it did not exist, or the base cannot be read."""
    if not base:
        return None
    try:
        content = await snapshots.read_base(workspace, base, path)
    except SnapshotError as exc:
        log.warning("no base content of %s: %s", path, exc)
        return None
    return None if content is None else content.decode(errors="replace")


async def diff(snapshots: WorkspaceSnapshots, workspace: Path, base: str | None, *, stat: bool = False) -> str:
    """The step's unified diff (for the review) or its diff stat (for the reflection); "" without a base."""
    if not base:
        return ""
    try:
        if stat:
            return await snapshots.diff_stat(workspace, base, max_chars=STAT_CHARS)
        return await snapshots.diff(workspace, base, max_chars=DIFF_CHARS)
    except SnapshotError as exc:
        log.warning("no diff of the step: %s", exc)
        return ""


async def content_now(snapshots: WorkspaceSnapshots, workspace: Path) -> str | None:
    """The workspace's content now as a git tree (a goal's commit is made of it); None without git."""
    try:
        if not await snapshots.is_repository(workspace):
            return None
        return await snapshots.current_tree(workspace)
    except SnapshotError as exc:
        log.warning("no tree of %s: %s", workspace, exc)
        return None
