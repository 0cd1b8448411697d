"""Routing functions (spec §5.2): pure, Literal-typed, and loud on an impossible state.

A run that gives up (`halt`) always goes to git_operations, which offers the finished work for
commit before finalize reports the failure.
"""

from __future__ import annotations

from typing import Literal

from langgraph.types import Send

from app.graph.rules.goals import finished_ids
from app.graph.rules.report import changed_files
from app.graph.state import OrchestratorState
from app.graph.state_access import Intake, Outcome, Position, Setbacks, Tests, UserTerms, Waves, rules_of
from app.schemas.domain import RecoveryAction

NextAfterStep = Literal["advance_step", "advance_goal", "git_operations"]


def route_after_intake(state: OrchestratorState) -> Literal["clarify", "evidence_pack"]:
    return "clarify" if Intake.of(state).needs_clarification else "evidence_pack"


WorkRoute = Literal["respond", "plan", "plan_epic", "design"]


def route_by_category(state: OrchestratorState) -> Literal["respond", "plan", "plan_epic", "design", "find_tests"]:
    """The planner of the request's category; under `require_tests`, work that may change code
    first learns which command runs the tests (find_tests, once per run)."""
    target = _category_route(state)
    rules = rules_of(state)
    tests_needed = bool(rules and rules.get("require_tests")) and Tests.of(state).test_plan is None
    if target != "respond" and tests_needed and Intake.of(state).task_action not in ("respond", "tracker_ops"):
        return "find_tests"
    return target


def route_after_find_tests(state: OrchestratorState) -> Literal["plan", "plan_epic", "design", "respond", "finalize"]:
    """Planning once the test command is known; the end when none could be had (its error says why)."""
    return "finalize" if Outcome.of(state).error else _category_route(state)


def _category_route(state: OrchestratorState) -> WorkRoute:
    category = Intake.of(state).task_category
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
    if Outcome.of(state).error:
        return "finalize"
    steps = Position.of(state).steps or []
    if not steps:
        return "select_goal" if Position.of(state).goals else "finalize"
    if all(step.get("step_type") == "respond" for step in steps):
        return "respond"
    return "execute_step"


def route_after_select_goal(state: OrchestratorState) -> list[Send] | Literal["plan_steps"]:
    """A wave's goals each to their own `run_goal` (side by side), or the one goal to plan_steps."""
    wave = Waves.of(state).wave
    if not wave:
        return "plan_steps"
    index = {g["id"]: i for i, g in enumerate(Position.of(state).goals or [])}
    shared = {k: v for k, v in state.items() if k not in WAVE_PRIVATE}
    return [Send("run_goal", {**shared, "current_goal_index": index[gid]}) for gid in wave["goals"]]


#: What a goal of a wave does not take along: the records of the other goals' work stay with the run.
WAVE_PRIVATE = frozenset({"wave_goals", "failures", "skipped", "warnings"})


def route_after_plan_steps(state: OrchestratorState) -> Literal["execute_step", "git_operations", "finalize"]:
    if Setbacks.of(state).halt:
        return "git_operations"
    return "execute_step" if Position.of(state).steps else "finalize"


def route_after_approval(state: OrchestratorState) -> Literal["select_goal", "replan", "design", "finalize"]:
    if Outcome.of(state).error or Outcome.of(state).final_result or not Position.of(state).goals:
        return "finalize"
    pending = Setbacks.of(state).recovery
    if pending and pending.get("action") == RecoveryAction.REPLANNING:  # refused with a reason
        return "design" if Waves.of(state).design else "replan"  # a design is revised, a plan replanned
    return "select_goal"


def route_after_execute(state: OrchestratorState) -> Literal["evaluate", "git_operations"]:
    return "git_operations" if Setbacks.of(state).halt else "evaluate"


def next_after_step(state: OrchestratorState) -> NextAfterStep:
    """Where a finished (or skipped) step leads: its goal's next step, the goal's summary (then the
    next goal), or git."""
    if Position.of(state).current_step_index + 1 < len(Position.of(state).steps or []):
        return "advance_step"
    goals = Position.of(state).goals or []
    index = Position.of(state).current_goal_index
    if index < len(goals) and not _summarised(state) and (
            len(goals) > 1 or Intake.of(state).task_category in ("epic", "generative")):
        return "advance_goal"  # every goal of a plan of goals is summarised, the last one too
    return "git_operations"


def _summarised(state: OrchestratorState) -> bool:
    """Whether the current goal already has its summary (the last goal's stays current)."""
    goal = (Position.of(state).goals or [])[Position.of(state).current_goal_index]
    return goal["id"] in finished_ids(state)


def all_summarised(state: OrchestratorState) -> bool:
    """Every goal of the plan is done (goals of a wave finish in any order)."""
    done = finished_ids(state)
    return all(g["id"] in done for g in Position.of(state).goals or [])


def route_after_advance_goal(state: OrchestratorState) -> Literal["select_goal", "review_epic", "git_operations"]:
    """The next goal; after an epic's last goal the review of its whole change; then git."""
    if not all_summarised(state):
        return "select_goal"
    return "review_epic" if needs_epic_review(state) else "git_operations"


def route_after_merge_wave(state: OrchestratorState) -> Literal["select_goal", "review_epic", "git_operations"]:
    """After a wave's merge: the halt it ran into, the next goals, or the end of the plan."""
    if Setbacks.of(state).halt:
        return "git_operations"
    return route_after_advance_goal(state)


def needs_epic_review(state: OrchestratorState) -> bool:
    """An epic that changed files and has not been reviewed with all of its goals yet."""
    review = Waves.of(state).epic_review
    return (Intake.of(state).task_category in ("epic", "generative") and bool(changed_files(state))
            and (review is None or review["goals"] < len(Position.of(state).goals or [])))


def route_after_review_epic(state: OrchestratorState) -> Literal["select_goal", "git_operations"]:
    """The fix-up goal a rejection added, or git."""
    return "git_operations" if all_summarised(state) else "select_goal"


def route_after_evaluate(
    state: OrchestratorState,
) -> Literal["reflect", "advance_step", "advance_goal", "git_operations"]:
    if Setbacks.of(state).halt:
        return "git_operations"
    evaluation = Setbacks.of(state).evaluation
    if evaluation is None:
        raise ValueError("evaluate produced no evaluation")
    if not evaluation.get("acceptable"):
        return "reflect"
    return next_after_step(state)


def route_recovery(
    state: OrchestratorState,
) -> Literal["execute_step", "replan", "ask_user", "advance_step", "advance_goal", "git_operations"]:
    """After reflect or ask_user: act on the decision."""
    if Setbacks.of(state).halt:
        return "git_operations"
    decision = Setbacks.of(state).recovery
    if decision is None:
        raise ValueError("no recovery decision after a failed step")
    match decision.get("action"):
        case RecoveryAction.RETRY | RecoveryAction.RETRY_MODIFIED:
            return "execute_step"
        case RecoveryAction.REPLANNING:
            return "replan"
        case RecoveryAction.ASK_USER:
            return "ask_user"
        case RecoveryAction.SKIP_STEP:
            return next_after_step(state)
    raise ValueError(f"recovery action {decision.get('action')!r} without a halt")


def route_after_replan(state: OrchestratorState) -> Literal["approve_plan", "execute_step", "git_operations"]:
    if Setbacks.of(state).halt:
        return "git_operations"
    if Intake.of(state).task_category in ("epic", "generative"):
        return "approve_plan"  # a replanned epic is approved again
    return "execute_step"


def route_after_git(state: OrchestratorState) -> Literal["execute_step", "finalize"]:
    """An approved commit waiting for the step the user added runs that step first."""
    return "execute_step" if UserTerms.of(state).commit_approval else "finalize"
