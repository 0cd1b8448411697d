"""Dependency waves of an epic plan (app/graph/nodes/plan_epic.py)."""

from __future__ import annotations

from typing import Any

from app.graph.goals import dependency_waves


def goal(gid: str, *deps: str) -> dict[str, Any]:
    return {"id": gid, "title": gid.upper(), "dependencies": list(deps)}


def test_dependency_waves_puts_independent_goals_in_one_wave() -> None:
    assert dependency_waves([goal("a"), goal("b"), goal("c")]) == [["a", "b", "c"]]


def test_dependency_waves_orders_a_chain_one_goal_per_wave() -> None:
    assert dependency_waves([goal("c", "b"), goal("a"), goal("b", "a")]) == [["a"], ["b"], ["c"]]


def test_dependency_waves_runs_diamond_sides_together() -> None:
    goals = [goal("a"), goal("b", "a"), goal("c", "a"), goal("d", "b", "c")]
    assert dependency_waves(goals) == [["a"], ["b", "c"], ["d"]]


def test_dependency_waves_keeps_plan_order_within_a_wave() -> None:
    goals = [goal("z"), goal("m"), goal("a", "z"), goal("b", "m")]
    assert dependency_waves(goals) == [["z", "m"], ["a", "b"]]


def test_dependency_waves_puts_goal_with_unknown_dependency_in_last_wave() -> None:
    # Docstring: "Unknown or cyclic dependencies are put in a last wave instead of blocking the plan."
    # select_goal agrees: a goal waiting on an id that never completes is run after the others.
    waves = dependency_waves([goal("a", "g9"), goal("b"), goal("c", "b")])
    assert waves == [["b"], ["c"], ["a"]]


def test_dependency_waves_does_not_lose_goals_when_a_dependency_is_unknown() -> None:
    waves = dependency_waves([goal("a", "g9"), goal("b")])
    assert sorted(g for wave in waves for g in wave) == ["a", "b"]


def test_dependency_waves_ignores_self_dependency() -> None:
    assert dependency_waves([goal("a", "a"), goal("b", "a")]) == [["a"], ["b"]]


def test_dependency_waves_puts_cycle_and_its_dependents_in_last_wave() -> None:
    goals = [goal("a", "b"), goal("b", "a"), goal("c"), goal("d", "a"), goal("e", "c")]
    assert dependency_waves(goals) == [["c"], ["e"], ["a", "b", "d"]]


def test_dependency_waves_returns_no_waves_for_no_goals() -> None:
    assert dependency_waves([]) == []


def test_dependency_waves_accepts_goals_without_dependencies_key() -> None:
    assert dependency_waves([{"id": "a", "title": "A"}, {"id": "b", "title": "B"}]) == [["a", "b"]]
