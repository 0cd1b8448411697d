"""Goal order at run time (app/graph/nodes/select_goal.py)."""

from __future__ import annotations

from typing import Any

from app.graph.goals import order_for_dependencies


def goal(gid: str, *deps: str) -> dict[str, Any]:
    return {"id": gid, "title": gid.upper(), "dependencies": list(deps)}


def ids(goals: list[dict[str, Any]]) -> list[str]:
    return [g["id"] for g in goals]


def test_order_for_dependencies_keeps_order_when_current_goal_is_ready() -> None:
    goals = [goal("a"), goal("b", "a")]
    assert order_for_dependencies(goals, 0, set()) is goals


def test_order_for_dependencies_treats_completed_dependencies_as_ready() -> None:
    goals = [goal("a"), goal("b", "a"), goal("c")]
    assert ids(order_for_dependencies(goals, 1, {"a"})) == ["a", "b", "c"]


def test_order_for_dependencies_swaps_in_first_ready_later_goal_when_current_waits() -> None:
    goals = [goal("a"), goal("b", "c"), goal("d", "c"), goal("c"), goal("e")]
    reordered = order_for_dependencies(goals, 1, {"a"})
    assert ids(reordered) == ["a", "c", "d", "b", "e"]
    assert ids(goals) == ["a", "b", "d", "c", "e"]  # the input list is not mutated


def test_order_for_dependencies_keeps_order_when_no_later_goal_can_run() -> None:
    goals = [goal("a", "b"), goal("b", "a")]
    assert ids(order_for_dependencies(goals, 0, set())) == ["a", "b"]


def test_order_for_dependencies_defers_a_goal_whose_dependency_never_finished() -> None:
    goals = [goal("a", "g9"), goal("b")]
    assert ids(order_for_dependencies(goals, 0, set())) == ["b", "a"]


def test_order_for_dependencies_keeps_order_when_index_is_past_the_end() -> None:
    goals = [goal("a", "x")]
    assert order_for_dependencies(goals, 1, set()) is goals
