"""Routing functions of the graph (app/graph/routing.py): every branch, and loud failures."""

from __future__ import annotations

from typing import Any

import pytest

from app.graph import routing

CODE = {"step_type": "code"}
RESPOND = {"step_type": "respond"}
TRACKER = {"step_type": "tracker"}
GOAL = {"id": "g1", "title": "Goal"}


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"needs_clarification": True}, "clarify"),
        ({"needs_clarification": False}, "evidence_pack"),
        ({}, "evidence_pack"),
    ],
    ids=["needs-clarification", "clear", "flag-missing"],
)
def test_route_after_intake_asks_only_when_clarification_is_needed(state: dict[str, Any], expected: str) -> None:
    assert routing.route_after_intake(state) == expected


@pytest.mark.parametrize(
    ("category", "expected"),
    [("advice", "respond"), ("single_task", "plan"), ("epic", "plan_epic"), ("generative", "design")],
)
def test_route_by_category_picks_the_node_of_each_category(category: str, expected: str) -> None:
    assert routing.route_by_category({"task_category": category}) == expected


@pytest.mark.parametrize("category", [None, "", "Advice", "unknown"])
def test_route_by_category_raises_value_error_when_category_is_impossible(category: str | None) -> None:
    with pytest.raises(ValueError, match="task_category"):
        routing.route_by_category({"task_category": category})


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"error": "LLM failed", "steps": [CODE], "goals": [GOAL]}, "finalize"),
        ({"steps": [], "goals": [GOAL]}, "select_goal"),
        ({"goals": [GOAL]}, "select_goal"),
        ({"steps": [], "goals": []}, "finalize"),
        ({}, "finalize"),
        ({"steps": [RESPOND], "goals": [GOAL]}, "respond"),
        ({"steps": [RESPOND, RESPOND]}, "respond"),
        ({"steps": [CODE]}, "execute_step"),
        ({"steps": [RESPOND, CODE]}, "execute_step"),
        ({"steps": [TRACKER]}, "execute_step"),
    ],
    ids=["error-wins", "goals-without-steps", "goals-steps-missing", "nothing-planned", "empty-state",
         "respond-only", "all-respond", "code", "respond-and-code", "tracker"],
)
def test_route_after_plan_follows_error_goals_and_step_types(state: dict[str, Any], expected: str) -> None:
    assert routing.route_after_plan(state) == expected


@pytest.mark.parametrize(
    ("state", "expected"),
    [({"steps": [CODE]}, "execute_step"), ({"steps": []}, "finalize"), ({}, "finalize")],
    ids=["has-steps", "no-steps", "steps-missing"],
)
def test_route_after_plan_steps_executes_only_when_steps_exist(state: dict[str, Any], expected: str) -> None:
    assert routing.route_after_plan_steps(state) == expected


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"goals": [GOAL]}, "select_goal"),
        ({"goals": [GOAL], "error": "boom"}, "finalize"),
        ({"goals": [GOAL], "final_result": "Plán byl zamítnut"}, "finalize"),
        ({"goals": []}, "finalize"),
        ({}, "finalize"),
    ],
    ids=["approved", "error", "rejected", "no-goals", "empty-state"],
)
def test_route_after_approval_continues_only_with_goals_and_no_result(state: dict[str, Any], expected: str) -> None:
    assert routing.route_after_approval(state) == expected


def _evaluated(acceptable: bool, **state: Any) -> dict[str, Any]:
    return {"evaluation": {"acceptable": acceptable, "checks": []}, **state}


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (_evaluated(False, steps=[CODE, CODE], current_step_index=0), "finalize"),
        (_evaluated(True, steps=[CODE, CODE], current_step_index=0, goals=[GOAL]), "advance_step"),
        (_evaluated(True, steps=[CODE, CODE], current_step_index=1, goals=[GOAL, GOAL], current_goal_index=0),
         "advance_goal"),
        (_evaluated(True, steps=[CODE], goals=[GOAL, GOAL]), "advance_goal"),
        (_evaluated(True, steps=[CODE], current_step_index=0, goals=[GOAL, GOAL], current_goal_index=1),
         "git_operations"),
        (_evaluated(True, steps=[CODE], goals=[GOAL]), "git_operations"),
        (_evaluated(True), "git_operations"),
    ],
    ids=["not-acceptable", "more-steps", "last-step-more-goals", "indices-default-to-0", "last-step-last-goal",
         "single-step-single-goal", "nothing-left"],
)
def test_route_after_evaluate_advances_step_then_goal_then_git(state: dict[str, Any], expected: str) -> None:
    assert routing.route_after_evaluate(state) == expected


@pytest.mark.parametrize("state", [{}, {"evaluation": None, "steps": [CODE]}], ids=["missing", "none"])
def test_route_after_evaluate_raises_value_error_when_no_evaluation(state: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="evaluation"):
        routing.route_after_evaluate(state)
