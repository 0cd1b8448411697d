"""Dependency waves of an epic plan (app/graph/rules/goals.py)."""

from __future__ import annotations

from typing import Any

import pytest

from app.graph.rules.goals import RemovedDependency, plan_order


def dependency_waves(goals: list[dict[str, Any]]) -> list[list[str]]:
    return plan_order(goals).waves


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


def test_a_dependency_on_no_goal_is_removed_and_reported() -> None:
    order = plan_order([goal("a", "g9"), goal("b"), goal("c", "b")])
    assert order.waves == [["a", "b"], ["c"]]
    assert order.removed == [RemovedDependency("a", "g9", cycle=False)]
    assert order.goals[0]["dependencies"] == []


@pytest.mark.parametrize("written", ["b", "B", "b ", "2", "goal 2", "Goal-2"])
def test_a_loosely_written_dependency_is_resolved_to_the_goal_it_names(written: str) -> None:
    order = plan_order([goal("a"), goal("b"), goal("c", written)])
    assert order.waves == [["a", "b"], ["c"]] and not order.removed
    assert order.goals[2]["dependencies"] == ["b"]


def test_a_dependency_on_a_title_is_resolved() -> None:
    goals = [{"id": "g1", "title": "Backend API", "dependencies": []},
             {"id": "g2", "title": "Frontend", "dependencies": ["Backend API"]}]
    assert plan_order(goals).goals[1]["dependencies"] == ["g1"]


def test_dependency_waves_ignores_self_dependency() -> None:
    assert dependency_waves([goal("a", "a"), goal("b", "a")]) == [["a"], ["b"]]


def test_a_cycle_is_broken_at_its_first_goal_and_reported() -> None:
    goals = [goal("x", "a"), goal("a", "b"), goal("b", "a"), goal("c"), goal("d", "a"), goal("e", "c")]
    order = plan_order(goals)
    # x waits on the cycle without being in it: "a" (the cycle's first goal) stops waiting for "b"
    assert order.removed == [RemovedDependency("a", "b", cycle=True)]
    assert order.waves == [["a", "c"], ["x", "b", "d", "e"]]
    assert [g["id"] for g in order.goals] == ["a", "c", "x", "b", "d", "e"]


def test_the_run_order_is_the_wave_order() -> None:
    order = plan_order([goal("a"), goal("b", "a"), goal("c")])
    assert order.waves == [["a", "c"], ["b"]]
    assert [g["id"] for g in order.goals] == ["a", "c", "b"]


def test_finished_goals_stay_in_front_and_count_as_met() -> None:
    goals = [goal("a"), goal("b"), goal("r1", "a", "r2"), goal("r2", "b")]
    order = plan_order(goals, finished=2)
    assert [g["id"] for g in order.goals] == ["a", "b", "r2", "r1"]
    assert order.waves == [["r2"], ["r1"]] and not order.removed


def test_dependency_waves_returns_no_waves_for_no_goals() -> None:
    assert dependency_waves([]) == []


def test_dependency_waves_accepts_goals_without_dependencies_key() -> None:
    assert dependency_waves([{"id": "a", "title": "A"}, {"id": "b", "title": "B"}]) == [["a", "b"]]
