"""Routing functions (spec §5.2): pure, Literal-typed, and loud on an impossible state."""

from __future__ import annotations

from typing import Literal

from app.graph.state import OrchestratorState


def route_after_intake(state: OrchestratorState) -> Literal["clarify", "evidence_pack"]:
    return "clarify" if state.get("needs_clarification") else "evidence_pack"


def route_by_category(state: OrchestratorState) -> Literal["respond", "plan", "plan_epic", "design"]:
    category = state.get("task_category")
    match category:
        case "advice":
            return "respond"
        case "single_task":
            return "plan"
        case "epic":
            return "plan_epic"
        case "generative":
            return "design"
    raise ValueError(f"unknown task_category: {category!r}")


def route_after_plan(state: OrchestratorState) -> Literal["respond", "execute_step", "select_goal", "finalize"]:
    if state.get("error"):
        return "finalize"
    steps = state.get("steps") or []
    if not steps:
        return "select_goal" if state.get("goals") else "finalize"
    if all(step.get("step_type") == "respond" for step in steps):
        return "respond"
    return "execute_step"


def route_after_plan_steps(state: OrchestratorState) -> Literal["execute_step", "finalize"]:
    return "execute_step" if state.get("steps") else "finalize"


def route_after_approval(state: OrchestratorState) -> Literal["select_goal", "finalize"]:
    if state.get("error") or state.get("final_result") or not state.get("goals"):
        return "finalize"
    return "select_goal"


def route_after_evaluate(
    state: OrchestratorState,
) -> Literal["finalize", "advance_step", "advance_goal", "git_operations"]:
    evaluation = state.get("evaluation")
    if evaluation is None:
        raise ValueError("evaluate produced no evaluation")
    if not evaluation.get("acceptable"):
        return "finalize"
    if state.get("current_step_index", 0) + 1 < len(state.get("steps") or []):
        return "advance_step"
    if state.get("current_goal_index", 0) + 1 < len(state.get("goals") or []):
        return "advance_goal"
    return "git_operations"
