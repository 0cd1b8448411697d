"""Orchestrator state (spec §6). Checkpointed after every node, so it holds references and
short texts only: agent logs, KB chunks and diffs live in the context store or on the volume."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Annotated, Any, TypedDict, get_args, get_origin, get_type_hints


def _attempt_key(result: dict[str, Any]) -> tuple[int, int, int, int]:
    return (result.get("goal_index", 0), result["step_index"], result.get("revision", 0), result.get("attempt", 1))


def merge_results(left: list[dict[str, Any]] | None, right: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Reducer of `step_results`: appends, except that a result for an attempt already listed
    replaces it — evaluate writes its verdict into the attempt's result that way."""
    merged = list(left or [])
    where = {_attempt_key(result): index for index, result in enumerate(merged)}
    for result in right or []:
        key = _attempt_key(result)
        if key in where:
            merged[where[key]] = result
        else:
            where[key] = len(merged)
            merged.append(result)
    return merged


class OrchestratorInput(TypedDict, total=False):
    """What a run starts from (built from the Kotlin request)."""

    thread_id: str
    task: dict[str, Any]
    """`CodingTask` dump: id, client_id, project_id, workspace_path, query, agent_preference."""
    rules: dict[str, Any]
    environment: dict[str, Any] | None
    jervis_project_id: str | None
    client_name: str | None
    project_name: str | None
    chat_history: dict[str, Any] | None
    budget_limits: dict[str, Any] | None
    """Token / USD / time limits of this run (settings merged with the request's)."""


class FailureRecord(TypedDict):
    """One failed attempt and what was decided (reflect / ask_user write it; the report reads it)."""

    goal_index: int
    step_index: int
    attempt: int
    title: str
    reason: str
    action: str


class SkipRecord(TypedDict):
    """A step given up and skipped (reflect / ask_user write it; finalize names it)."""

    goal_index: int
    step_index: int
    title: str
    reason: str


class Halt(TypedDict):
    """Why the run gives up before finishing (recovery exhausted, the user said stop, budget, LLM).
    Set by the node that decides; git_operations then offers the finished work for commit and
    finalize turns it into the run's error text."""

    kind: str
    """exhausted | user_stop | budget | llm"""
    message: str


class OrchestratorState(OrchestratorInput, total=False):
    language: str
    """The run's response language (intake: the request's language unless configured); every
    prompt and user-facing text follows it."""
    # intake
    task_category: str | None
    task_action: str | None
    external_refs: list[str]
    task_complexity: str | None
    needs_clarification: bool
    clarification_questions: list[str]
    clarification_response: dict[str, Any] | None
    clarification_rounds: int
    project_context: str | None
    kb_results: list[dict[str, str]]
    """Task-relevant KB hits found by intake ({source, content[:300]}), reused by evidence_pack."""
    kb_warnings: list[str]
    allow_cloud_prompt: bool
    # evidence
    evidence_pack: dict[str, Any] | None
    # goals and steps
    goals: list[dict[str, Any]]
    current_goal_index: int
    steps: list[dict[str, Any]]
    current_step_index: int
    step_results: Annotated[list[dict[str, Any]], merge_results]
    """`StepResult` of every attempt (execute_step appends, evaluate folds its verdict into `success`)."""
    goal_summaries: Annotated[list[dict[str, Any]], operator.add]
    evaluation: dict[str, Any] | None
    """`Evaluation` of the last step attempt (evaluate writes; routing, reflect and execute_step read)."""
    # recovery (reflection on failure, spec 000)
    attempt: int
    """1-based attempt of the current step (reflect / ask_user raise it; advance_*, plan_steps and
    replan reset it). Part of the agent Job's name, so a restart re-attaches to the right attempt."""
    extra_attempts: int
    """Attempts the user granted beyond RECOVERY_MAX_ATTEMPTS for the current step (ask_user)."""
    cap_asked: bool
    """The user was already asked about the current step's exhausted attempts: next time it stops."""
    recovery: dict[str, Any] | None
    """`Recovery` decided for the last failure (reflect / ask_user write; routing and execute_step read)."""
    failures: Annotated[list[FailureRecord], operator.add]
    """Every failed attempt and the action taken, for the report and the reflection's history."""
    skipped: Annotated[list[SkipRecord], operator.add]
    """Steps skipped after failing (named in the final report)."""
    replans: int
    """Replannings used in this run (RECOVERY_MAX_REPLANS caps them)."""
    questions: int
    """Recovery questions asked in this run (RECOVERY_MAX_QUESTIONS caps them)."""
    halt: Halt | None
    """Set when the run gives up; routes to git_operations (commit of finished work) and finalize."""
    warnings: Annotated[list[str], operator.add]
    """Report warnings: tests not run, review without verdict, classification fallback."""
    user_conditions: Annotated[list[str], operator.add]
    """Conditions the user attached to an approval ("bez nové závislosti"): every later plan and
    agent instruction repeats them."""
    commit_approval: dict[str, Any] | None
    """An approved commit waiting for an extra step the user asked for ("ano, ale přidej testy"):
    git_operations commits without asking again once the step is done. Holds `ApprovalDecision`
    fields plus `branch`."""
    replan_reason: str | None
    """Why the goals were just replanned (replan writes it, approve_plan shows it and clears it)."""
    progress_floor: float
    """Percent already reported before a replan shrank the done fraction: progress never goes back."""
    # results
    branch: str | None
    commit_sha: str | None
    git_outcome: str | None
    """"committed", "pushed", "commit_rejected", "push_rejected", "no_changes", "not_a_repo"."""
    final_result: str | None
    artifacts: list[str]
    error: str | None


@functools.cache
def reducers() -> dict[str, Callable[[Any, Any], Any]]:
    """The reducer of every key that has one, read from the annotations above: the annotations
    stay the only place that says how a key's updates combine."""
    hints = get_type_hints(OrchestratorState, include_extras=True)
    return {key: get_args(hint)[1] for key, hint in hints.items()
            if get_origin(hint) is Annotated and callable(get_args(hint)[1])}
