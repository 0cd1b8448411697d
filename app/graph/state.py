"""Orchestrator state (spec §6). Checkpointed after every node, so it holds references and
short texts only: agent logs, KB chunks and diffs live in the context store or on the volume."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Annotated, Any, NotRequired, TypedDict, get_args, get_origin, get_type_hints

from app.graph.state_parts import (
    ChatHistoryDict,
    ClarificationDict,
    CommitApprovalDict,
    DesignDict,
    EpicReviewDict,
    EvaluationDict,
    EvidencePackDict,
    GoalDict,
    GoalSummaryDict,
    JsonObject,
    KbHit,
    PlannedTestsDict,
    RecoveryDict,
    RulesDict,
    StepDict,
    StepResultDict,
    TaskDict,
    WaveDict,
    WaveGoalDict,
)


def _attempt_key(result: StepResultDict) -> tuple[int, int, int, int]:
    return (result.get("goal_index", 0), result["step_index"], result.get("revision", 0), result.get("attempt", 1))


def merge_results(left: list[StepResultDict] | None, right: list[StepResultDict] | None) -> list[StepResultDict]:
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
    """What a run starts from: built from the Kotlin request by the run manager, read-only after."""

    task: TaskDict
    """The task worked on; every node reads it (query, workspace, agent preference, names shown in
    prompts, the language and budget decided at dispatch). The thread id is the config's
    (`current_thread_id`)."""
    rules: RulesDict
    """Project rules: gates (git_operations), forbidden files and limits (evaluate), cloud use (manager)."""
    environment: JsonObject | None
    """The project's environment as Kotlin sent it; agents get it rendered (execute_step)."""
    jervis_project_id: str | None
    """Kotlin's project id for tracker operations (execute_step's tracker steps)."""
    chat_history: ChatHistoryDict | None
    """The conversation so far: intake classifies with it, respond and plans read it (`app/graph/chat.py`)."""


class FailureRecord(TypedDict):
    """One failed attempt and what was decided (reflect / ask_user write it; the report reads it)."""

    goal_index: int
    step_index: int
    attempt: int
    title: str
    reason: str
    action: str
    signature: NotRequired[str]
    """`recovery.failure_signature` of the failed attempt (reflect writes it): the same failure again
    changes the retry's approach."""


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
    """Everything a run knows between nodes. Keys with an `Annotated` reducer accumulate; every
    other key is replaced by the node that returns it."""

    # intake
    task_category: str | None
    """`TaskCategory` (intake writes; routing, approve_plan and replan read)."""
    task_action: str | None
    """`TaskAction` (intake writes; plan reads: respond-only, code, tracker or mixed)."""
    external_refs: list[str]
    """Issue keys and links named in the request (intake writes; evidence_pack fetches them)."""
    task_complexity: str | None
    """`Complexity` (intake writes; plan reads to size the plan)."""
    needs_clarification: bool
    """The request is unclear (intake writes, clarify clears; routing reads)."""
    clarification_questions: list[str]
    """What clarify asks (intake writes; clarify reads)."""
    clarification_response: ClarificationDict | None
    """The questions asked and the user's answer (clarify writes; prompts read it as context)."""
    clarification_rounds: int
    """Clarification rounds so far (clarify writes; intake stops asking after the cap)."""
    project_context: str | None
    """Project description from the KB (intake writes; prompts read it)."""
    kb_results: list[KbHit]
    """Task-relevant KB hits found by intake ({source, content[:300]}), reused by evidence_pack."""
    kb_warnings: list[str]
    """KB problems met by intake (unreachable, empty); evidence_pack lists them as unknowns."""
    allow_cloud_prompt: bool
    """The request asked for the cloud (intake writes; kept for the report and resumes)."""
    test_plan: PlannedTestsDict | None
    """The command that runs the project's tests under `require_tests`, and where it came from
    (find_tests writes it before any planning; the plan gate, progress and the checks read it)."""
    test_seconds: float | None
    """The longest test run of this run that ended by itself (evaluate writes; the next test run's
    deadline is a multiple of it, `verification.deadline_for_tests`)."""
    # evidence
    evidence_pack: EvidencePackDict | None
    """What evidence_pack gathered (KB, tracker artifacts, facts, unknowns); plans and answers read it."""
    # goals and steps
    goals: list[GoalDict]
    """The plan's goals (plan / plan_epic / approve_plan / replan write; select_goal, routing,
    progress and the report read)."""
    current_goal_index: int
    """Index into `goals` of the goal being worked on (plan and advance_goal write)."""
    steps: list[StepDict]
    """The current goal's steps (plan_steps, replan, git_operations write; execute_step and routing read)."""
    current_step_index: int
    """Index into `steps` of the step being worked on (plan_steps and advance_step write)."""
    step_results: Annotated[list[StepResultDict], merge_results]
    """`StepResult` of every attempt (execute_step appends, evaluate folds its verdict into `success`)."""
    goal_summaries: Annotated[list[GoalSummaryDict], operator.add]
    """One per finished goal (advance_goal appends; later plans, replan and the report read)."""
    evaluation: EvaluationDict | None
    """`Evaluation` of the last step attempt (evaluate writes; routing, reflect and execute_step read)."""
    design: DesignDict | None
    """The design document of a generative request (design writes it, revises it on a refusal
    with a reason; approve_plan shows it, git_operations commits it first)."""
    wave: WaveDict | None
    """The goals running side by side now, each in its own worktree (select_goal writes as a wave
    starts, merge_wave clears it once their work is merged)."""
    wave_goals: Annotated[list[WaveGoalDict], operator.add]
    """How each goal of a wave ended in its worktree, then how its merge went (run_goal and
    merge_wave append; the latest record of a goal counts; select_goal runs a failed one again)."""
    epic_review: EpicReviewDict | None
    """The review of an epic's whole change after its last goal (review_epic writes; routing, the next
    review round and the report read)."""
    # recovery (reflection on failure, spec 000)
    attempt: int
    """1-based attempt of the current step (reflect / ask_user raise it; advance_*, plan_steps and
    replan reset it). Part of the agent Job's name, so a restart re-attaches to the right attempt."""
    extra_attempts: int
    """Attempts the user granted beyond RECOVERY_MAX_ATTEMPTS for the current step (ask_user)."""
    cap_asked: bool
    """The user was already asked about the current step's exhausted attempts: next time it stops."""
    recovery: RecoveryDict | None
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
    commit_approval: CommitApprovalDict | None
    """An approved commit waiting for an extra step the user asked for ("ano, ale přidej testy"):
    git_operations commits without asking again once the step is done."""
    replan_reason: str | None
    """Why the goals were just replanned (replan writes it, approve_plan shows it and clears it)."""
    progress_floor: float
    """Percent already reported before a replan shrank the done fraction: progress never goes back."""
    # results
    branch: str | None
    """The branch committed to (git_operations writes; finalize and the status push read)."""
    commit_sha: str | None
    """The commit made (git_operations writes; the report reads)."""
    git_outcome: str | None
    """"committed", "pushed", "commit_rejected", "push_rejected", "no_changes", "not_a_repo"."""
    final_result: str | None
    """The answer or report shown to the user (respond / finalize write; the done status carries it)."""
    artifacts: list[str]
    """Files changed by the run (git_operations / finalize write; the status push carries them)."""
    error: str | None
    """Why the run failed (finalize writes from `halt`; the error status carries it)."""


@functools.cache
def reducers() -> dict[str, Callable[[Any, Any], Any]]:
    """The reducer of every key that has one, read from the annotations above: the annotations
    stay the only place that says how a key's updates combine."""
    hints = get_type_hints(OrchestratorState, include_extras=True)
    return {key: get_args(hint)[1] for key, hint in hints.items()
            if get_origin(hint) is Annotated and callable(get_args(hint)[1])}
