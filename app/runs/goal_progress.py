"""Where each goal of a plan stands, for progress pushes, SSE and `/status` while goals of a wave
run side by side.

The run's own state says which goals are done (their summaries) and which run now (the wave);
the goal subgraphs' node starts (streamed with `subgraphs=True`) say what each running goal is
doing. Pure functions over those two: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.graph.rules.goals import finished_ids
from app.graph.rules.progress import goal_share
from app.graph.state_access import Attempts, Position
from app.texts import Texts
from app.texts.clip import clip

TITLE_CHARS = 60
#: The run's own nodes that work on its current goal.
GOAL_LOOP = frozenset({"plan_steps", "execute_step", "evaluate", "reflect", "ask_user", "replan", "advance_step",
                       "advance_goal"})


@dataclass(frozen=True)
class GoalActivity:
    """The node a goal of a wave started last, in its own subgraph."""

    goal_id: str
    title: str
    index: int
    node: str
    step: int
    """1-based step of the goal's plan (0 before it has one)."""
    steps: int
    attempt: int
    share: float
    """0..1: how far the goal is (`progress.goal_share`)."""


def activity_of(node: str, state: Mapping[str, Any]) -> GoalActivity | None:
    """A goal subgraph's node start, from the state the node starts with."""
    goals = Position.of(state).goals or []
    index = int(Position.of(state).current_goal_index or 0)
    if not 0 <= index < len(goals):
        return None
    steps = Position.of(state).steps or []
    return GoalActivity(goal_id=str(goals[index].get("id")), title=str(goals[index].get("title", "")), index=index,
                        node=node, step=int(Position.of(state).current_step_index or 0) + 1 if steps else 0,
                        steps=len(steps), attempt=int(Attempts.of(state).attempt or 1), share=goal_share(state, node))


def goal_states(run: Mapping[str, Any], activity: Mapping[str, GoalActivity], t: Texts, node: str = "") -> str:
    """"1. Add alpha: done; 2. Add gamma: running (execute_step, step 1/2); 3. Add beta: waiting"
    for a plan of several goals, "" otherwise. `node` is the run's own node now: a goal worked on
    alone runs in the run's own loop."""
    goals = run.get("goals") or []
    if len(goals) < 2:
        return ""
    done = finished_ids(run)
    running = set((run.get("wave") or {}).get("goals") or [])
    own = GoalActivity("", "", int(run.get("current_goal_index") or 0), node,
                       int(run.get("current_step_index") or 0) + 1, len(run.get("steps") or []), 1, 0.0)
    parts = []
    for index, goal in enumerate(goals):
        gid = str(goal.get("id"))
        if gid in running:
            seen: GoalActivity | None = activity.get(gid) or GoalActivity(gid, "", index, "run_goal", 0, 0, 1, 0.0)
        else:
            seen = own if not running and index == own.index and node in GOAL_LOOP else None
        if gid in done:
            state = t.goal_state_done
        elif seen is not None:
            step = t.goal_state_step.format(step=seen.step, steps=seen.steps) if seen.steps else ""
            state = t.goal_state_running.format(node=seen.node, step=step)
        else:
            state = t.goal_state_waiting
        parts.append(f"{index + 1}. {clip(str(goal.get('title', gid)), TITLE_CHARS)}: {state}")
    return "; ".join(parts)
