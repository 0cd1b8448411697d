"""Goal order: the dependency waves the user approves are the order the goals run in.

A model names dependencies loosely ("1", "goal 2", a title, an id it never gave a goal) and
sometimes in a cycle. `plan_order` resolves what it can, removes what it cannot and says so (the
plan gate shows the notes), so a dependency is never silently ignored and the run order is
exactly the approved waves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.graph.state_access import WorkDone
from app.graph.state_parts import GoalDict

_NUMBER = re.compile(r"(\d+)\s*$")


@dataclass(frozen=True)
class RemovedDependency:
    """A dependency the plan could not keep: on a goal that does not exist, or closing a cycle."""

    goal: str
    dependency: str
    cycle: bool


@dataclass(frozen=True)
class GoalOrder:
    goals: list[GoalDict]
    """Finished goals first (as they were), then the rest wave by wave, plan order within a wave."""
    waves: list[list[str]]
    """Goal ids of the unfinished goals, grouped: a goal's dependencies are all in earlier waves."""
    removed: list[RemovedDependency] = field(default_factory=list)


def finished_ids(state: Mapping[str, Any]) -> set[str]:
    """Ids of the goals already done: those with a summary (goals of a wave end in any order)."""
    return {s["goal_id"] for s in WorkDone.of(state).goal_summaries or []}


def _key(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.lower())


def _resolve(dependency: str, goals: Sequence[GoalDict], ids: set[str]) -> str | None:
    """The id a loosely written dependency means: an id, an id or title written differently, or a
    goal's number in the plan ("2", "goal 2"); None when it names no goal."""
    if dependency in ids:
        return dependency
    wanted = _key(dependency)
    for goal in goals:
        if wanted and wanted in (_key(goal["id"]), _key(goal.get("title", ""))):
            return goal["id"]
    number = _NUMBER.search(dependency)
    if number and 1 <= int(number.group(1)) <= len(goals):
        return goals[int(number.group(1)) - 1]["id"]
    return None


def plan_order(goals: Sequence[GoalDict], *, finished: int = 0) -> GoalOrder:
    """Order the goals after the first `finished` (already done, kept in front) into waves.

    Dependencies are resolved to ids; one on no goal is removed and reported; a cycle is broken at
    its first goal in plan order (that goal's dependencies inside the cycle are removed and
    reported). Dependencies on finished goals are met."""
    done, rest = list(goals[:finished]), list(goals[finished:])
    done_ids = {g["id"] for g in done}
    ids = done_ids | {g["id"] for g in rest}
    removed: list[RemovedDependency] = []
    resolved: list[GoalDict] = []
    for goal in rest:
        deps: list[str] = []
        for dependency in goal.get("dependencies", []):
            target = _resolve(dependency, rest, ids)
            if target is None:
                removed.append(RemovedDependency(goal["id"], dependency, cycle=False))
            elif target != goal["id"] and target not in deps:
                deps.append(target)
        resolved.append({**goal, "dependencies": deps})
    by_id = {g["id"]: g for g in resolved}
    pending = {g["id"]: {d for d in g["dependencies"] if d not in done_ids} for g in resolved}
    while cyclic := [gid for gid in by_id if _reaches(pending, pending[gid], gid)]:
        first = cyclic[0]  # its first goal in plan order stops waiting for the goals that wait on it
        closing = {d for d in pending[first] if _reaches(pending, {d}, first)}
        removed.extend(RemovedDependency(first, d, cycle=True) for d in sorted(closing))
        by_id[first] = {**by_id[first], "dependencies": [d for d in by_id[first]["dependencies"] if d not in closing]}
        pending[first] -= closing
    waves: list[list[str]] = []
    met: set[str] = set()
    while pending:
        wave = [gid for gid in by_id if gid in pending and pending[gid] <= met]
        waves.append(wave)
        met.update(wave)
        for gid in wave:
            del pending[gid]
    ordered = [by_id[gid] for wave in waves for gid in wave]
    return GoalOrder(goals=done + ordered, waves=waves, removed=removed)


def _reaches(pending: dict[str, set[str]], start: set[str], target: str) -> bool:
    """Whether following unmet dependencies from `start` leads to `target`."""
    seen: set[str] = set()
    frontier = list(start)
    while frontier:
        gid = frontier.pop()
        if gid == target:
            return True
        if gid not in seen:
            seen.add(gid)
            frontier.extend(pending.get(gid, ()))
    return False


def order_for_dependencies(goals: list[GoalDict], index: int, completed: set[str]) -> list[GoalDict]:
    """If goal `index` waits on unfinished goals, swap in the first later goal that does not;
    if none can run, keep the order. Goals run in approved wave order, so this matters only for a
    plan that did not pass the plan gate (a single task's one goal never waits)."""
    def ready(goal: GoalDict) -> bool:
        return all(dep in completed for dep in goal.get("dependencies", []))

    if index >= len(goals) or ready(goals[index]):
        return goals
    for later in range(index + 1, len(goals)):
        if ready(goals[later]):
            reordered = list(goals)
            reordered[index], reordered[later] = reordered[later], reordered[index]
            return reordered
    return goals
