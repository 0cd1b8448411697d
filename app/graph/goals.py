"""Goal order: dependency waves for the plan gate, and the next goal whose dependencies are done."""

from __future__ import annotations

from collections.abc import Sequence

from app.graph.state_parts import GoalDict


def dependency_waves(goals: Sequence[GoalDict]) -> list[list[str]]:
    """Goal ids grouped in waves: a goal runs after every goal it depends on. Unknown or
    cyclic dependencies are put in a last wave instead of blocking the plan."""
    ids = list(dict.fromkeys(g["id"] for g in goals))
    pending: dict[str, set[str]] = {}
    for goal in goals:  # a dependency on an unknown id never resolves: such goals go last
        pending.setdefault(goal["id"], set()).update(d for d in goal.get("dependencies", []) if d != goal["id"])
    waves: list[list[str]] = []
    done: set[str] = set()
    while pending:
        wave = [gid for gid in ids if gid in pending and pending[gid] <= done]
        if not wave:
            waves.append([gid for gid in ids if gid in pending])
            break
        waves.append(wave)
        done.update(wave)
        for gid in wave:
            del pending[gid]
    return waves


def order_for_dependencies(goals: list[GoalDict], index: int, completed: set[str]) -> list[GoalDict]:
    """If goal `index` waits on unfinished goals, swap in the first later goal that does not;
    if none can run, keep the order (best effort, as the spec says)."""
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
