"""Routing functions of the graph (app/graph/routing.py): every branch, and loud failures."""

from __future__ import annotations

from typing import Any

import pytest

from app.graph import routing

CODE = {"step_type": "code"}
RESPOND = {"step_type": "respond"}
TRACKER = {"step_type": "tracker"}
GOAL = {"id": "g1", "title": "Goal"}
HALT = {"kind": "exhausted", "message": "step 1 failed 3 times"}


def _decided(action: str, **state: Any) -> dict[str, Any]:
    return {"recovery": {"action": action, "failure": "x"}, **state}


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
    [({"steps": [CODE]}, "execute_step"), ({"steps": []}, "finalize"), ({}, "finalize"),
     ({"steps": [CODE], "halt": HALT}, "git_operations")],
    ids=["has-steps", "no-steps", "steps-missing", "halted"],
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
        (_decided("replanning", goals=[GOAL]), "replan"),
    ],
    ids=["approved", "error", "rejected", "no-goals", "empty-state", "refused-with-a-reason"],
)
def test_route_after_approval_continues_only_with_goals_and_no_result(state: dict[str, Any], expected: str) -> None:
    assert routing.route_after_approval(state) == expected


def _evaluated(acceptable: bool, **state: Any) -> dict[str, Any]:
    return {"evaluation": {"acceptable": acceptable, "checks": []}, **state}


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (_evaluated(False, steps=[CODE, CODE], current_step_index=0), "reflect"),
        (_evaluated(True, steps=[CODE, CODE], current_step_index=0, halt=HALT), "git_operations"),
        (_evaluated(True, steps=[CODE, CODE], current_step_index=0, goals=[GOAL]), "advance_step"),
        (_evaluated(True, steps=[CODE, CODE], current_step_index=1, goals=[GOAL, GOAL], current_goal_index=0),
         "advance_goal"),
        (_evaluated(True, steps=[CODE], goals=[GOAL, GOAL]), "advance_goal"),
        (_evaluated(True, steps=[CODE], current_step_index=0, goals=[GOAL, GOAL], current_goal_index=1),
         "advance_goal"),  # every goal of a plan of goals is summarised, the last one too
        (_evaluated(True, steps=[CODE], current_step_index=0, goals=[GOAL, GOAL], current_goal_index=1,
                    goal_summaries=[{"goal_id": GOAL["id"]}]), "git_operations"),
        (_evaluated(True, steps=[CODE], goals=[GOAL]), "git_operations"),
        (_evaluated(True), "git_operations"),
    ],
    ids=["not-acceptable-reflects", "halted", "more-steps", "last-step-more-goals", "indices-default-to-0",
         "last-step-last-goal", "last-goal-summarised", "single-step-single-goal", "nothing-left"],
)
def test_route_after_evaluate_advances_step_then_goal_then_git(state: dict[str, Any], expected: str) -> None:
    assert routing.route_after_evaluate(state) == expected


@pytest.mark.parametrize(
    ("summaries", "expected"),
    [([{"goal_id": "g1"}], "advance_goal"), ([{"goal_id": "g1"}, {"goal_id": "g2"}], "git_operations")],
    ids=["last-goal-not-summarised", "last-goal-summarised-once"],
)
def test_an_epics_last_goal_is_summarised_once_before_git(summaries: list[dict[str, Any]], expected: str) -> None:
    goals = [GOAL, {"id": "g2", "title": "Second"}]
    state = _evaluated(True, steps=[CODE], goals=goals, current_goal_index=1, task_category="epic",
                       goal_summaries=summaries)
    assert routing.route_after_evaluate(state) == expected
    assert routing.route_after_advance_goal(state) == ("git_operations" if expected == "git_operations"
                                                       else "select_goal")


@pytest.mark.parametrize("state", [{}, {"evaluation": None, "steps": [CODE]}], ids=["missing", "none"])
def test_route_after_evaluate_raises_value_error_when_no_evaluation(state: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="evaluation"):
        routing.route_after_evaluate(state)


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (_decided("retry", steps=[CODE]), "execute_step"),
        (_decided("retry_modified", steps=[CODE]), "execute_step"),
        (_decided("replanning", steps=[CODE]), "replan"),
        (_decided("ask_user", steps=[CODE]), "ask_user"),
        (_decided("skip_step", steps=[CODE, CODE], current_step_index=0, goals=[GOAL]), "advance_step"),
        (_decided("skip_step", steps=[CODE], goals=[GOAL, GOAL]), "advance_goal"),
        (_decided("skip_step", steps=[CODE], goals=[GOAL]), "git_operations"),
        (_decided("stop", halt=HALT), "git_operations"),
        (_decided("retry", halt=HALT), "git_operations"),
    ],
    ids=["retry", "retry-modified", "replan", "ask", "skip-to-next-step", "skip-to-next-goal", "skip-last-step",
         "stop", "halt-wins"],
)
def test_route_recovery_acts_on_the_decision(state: dict[str, Any], expected: str) -> None:
    assert routing.route_recovery(state) == expected


@pytest.mark.parametrize("state", [{}, _decided("stop")], ids=["no-decision", "stop-without-halt"])
def test_route_recovery_raises_value_error_on_an_impossible_state(state: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"no recovery decision|without a halt"):
        routing.route_recovery(state)


@pytest.mark.parametrize(
    ("state", "expected"),
    [({"task_category": "epic"}, "approve_plan"), ({"task_category": "generative"}, "approve_plan"),
     ({"task_category": "single_task"}, "execute_step"), ({"task_category": "epic", "halt": HALT}, "git_operations")],
    ids=["epic-asks-again", "design-asks-again", "single-task-continues", "halted"],
)
def test_route_after_replan_sends_replanned_epics_back_to_their_gate(state: dict[str, Any], expected: str) -> None:
    assert routing.route_after_replan(state) == expected


@pytest.mark.parametrize(
    ("state", "expected"),
    [({"halt": HALT}, "git_operations"), ({}, "evaluate")],
    ids=["halted", "evaluate"],
)
def test_route_after_execute_evaluates_unless_halted(state: dict[str, Any], expected: str) -> None:
    assert routing.route_after_execute(state) == expected


@pytest.mark.parametrize(
    ("state", "expected"),
    [({"commit_approval": {"approved": True, "branch": "task/t"}}, "execute_step"),
     ({"commit_approval": None}, "finalize"), ({}, "finalize")],
    ids=["approved-with-an-added-step", "committed", "nothing-pending"],
)
def test_route_after_git_runs_the_step_the_user_added_before_finishing(state: dict[str, Any], expected: str) -> None:
    assert routing.route_after_git(state) == expected
