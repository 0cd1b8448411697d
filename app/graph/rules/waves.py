"""Goals side by side: which goals may start together, and where each one works.

A wave is the set of ready goals (dependencies done) that start together, each in a git worktree
of its own beside the workspace (`app/agents/worktrees.py`); `select_goal` starts it, `run_goal`
works each goal, `merge_wave` merges their work back in plan order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.agents.worktrees import WORKTREES_SUFFIX
from app.config import Settings
from app.graph.state_parts import GoalDict, WaveGoalDict

#: Plans of goals that may run side by side (a single task is one goal).
PARALLEL_CATEGORIES = frozenset({"epic", "generative"})
#: A goal's latest wave record with one of these runs again on its own.
RUN_ALONE = frozenset({"failed", "conflict"})


def parallel_limit(settings: Settings) -> int:
    """`EPIC_MAX_PARALLEL_GOALS`, or its default: 2 on Kubernetes, 1 on the local runner."""
    if settings.epic_max_parallel_goals is not None:
        return settings.epic_max_parallel_goals
    return 2 if settings.agent_runner == "kubernetes" else 1


def latest_wave_records(records: Sequence[WaveGoalDict]) -> dict[str, WaveGoalDict]:
    """Each goal's latest wave record (a goal's merge record follows its run record)."""
    return {record["goal_id"]: record for record in records}


def ready_goals(goals: Sequence[GoalDict], done: set[str]) -> list[int]:
    """Indexes of the unfinished goals whose dependencies are all done, in plan (wave) order."""
    return [i for i, g in enumerate(goals)
            if g["id"] not in done and all(d in done for d in g.get("dependencies", []))]


def worktree_path(workspace_path: str, thread_id: str, index: int) -> str:
    """A goal's worktree, beside the workspace on the shared volume (relative to DATA_ROOT)."""
    return f"{workspace_path.rstrip('/')}{WORKTREES_SUFFIX}/{_slug(thread_id)}-g{index}"


def goal_branch(thread_id: str, index: int) -> str:
    """The branch of a goal's worktree (removed with it after the merge)."""
    return f"jervis/goals/{_slug(thread_id)}-g{index}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:60] or "run"
