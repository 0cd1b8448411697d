"""The shapes of what the graph state holds: the checkpointed (plain dict) form of the request
and domain models. A checkpoint stores dicts, so nodes read dicts; these types say exactly which
keys a dict has. Each mirrors a pydantic model's `model_dump()` (tests/unit/graph/test_state.py
checks that the keys match, so the two cannot drift); nodes validate back into the model where
they need its behaviour."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

#: A JSON object Kotlin sends as it is (the project's environment description): free-form.
JsonObject = dict[str, Any]


class TaskDict(TypedDict):
    """`CodingTask`: what the run works on (built from the request; read by every node). One
    checkpoint channel for the request's read-only facts: each channel is a document per write."""

    id: str
    client_id: str
    project_id: str | None
    workspace_path: str
    query: str
    agent_preference: str
    client_name: NotRequired[str | None]
    """Shown in prompts (identity) next to the project name."""
    project_name: NotRequired[str | None]
    """Shown in prompts (identity)."""
    language: NotRequired[str | None]
    """The run's response language, decided at dispatch (`run_language` reads it)."""
    budget_limits: NotRequired[BudgetLimitsDict | None]
    """Token / USD / time limits of this run (settings merged with the request's); the run manager
    builds the budget tracker from it on every segment."""


#: Rules as the helpers read them: a RulesDict, or a part of one (`rules_of(state)`); every
#: key is read with its ProjectRules default.
Rules = Mapping[str, Any]


class RulesDict(TypedDict):
    """`ProjectRules` of the request (gates, branches, forbidden files, review, cloud use)."""

    branch_naming: str
    commit_prefix: str
    require_review: bool
    require_tests: bool
    require_approval_commit: bool
    require_approval_push: bool
    allowed_branches: list[str]
    forbidden_files: list[str]
    max_changed_files: int
    auto_push: bool
    auto_use_anthropic: bool
    auto_use_openai: bool
    auto_use_gemini: bool


class ChatMessageDict(TypedDict):
    role: str
    content: str
    timestamp: str
    sequence: int


class ChatSummaryDict(TypedDict):
    sequence_range: str
    summary: str
    key_decisions: list[str]
    topics: list[str]
    is_checkpoint: bool
    checkpoint_reason: str | None


class ChatHistoryDict(TypedDict):
    """`ChatHistoryPayload`: the conversation so far (recent messages and compressed blocks)."""

    recent_messages: list[ChatMessageDict]
    summary_blocks: list[ChatSummaryDict]
    total_message_count: int


class BudgetLimitsDict(TypedDict):
    """`BudgetLimits`: the run's limits (settings merged with the request's); None = no limit."""

    max_tokens: int | None
    max_cost_usd: float | None
    max_seconds: float | None


class KbHit(TypedDict):
    """One Knowledge Base result, shortened."""

    source: str
    content: str


class ClarificationDict(TypedDict):
    """The questions clarify asked and the user's answer."""

    questions: list[str]
    answer: str


class EvidencePackDict(TypedDict):
    """`EvidencePack`: what evidence_pack gathered for planning and answering."""

    kb_results: list[dict[str, str]]
    tracker_artifacts: list[dict[str, str]]
    chat_history_summary: str
    external_refs: list[str]
    facts: list[str]
    unknowns: list[str]
    earlier_run: NotRequired[str]
    """How the previous request of the same chat ended (absent in checkpoints written before it)."""


class GoalDict(TypedDict):
    """`Goal` of the plan."""

    id: str
    title: str
    description: str
    complexity: str
    dependencies: list[str]


class TrackerOperationDict(TypedDict):
    op: str
    title: str | None
    description: str
    issue_key: str | None
    status: str | None
    comment: str | None
    type: str


class StepDict(TypedDict):
    """`CodingStep` of the current goal."""

    index: int
    instructions: str
    step_type: str
    agent_type: str | None
    files: list[str]
    tracker_operations: list[TrackerOperationDict]
    expects_changes: bool
    critical: bool
    revision: int


class StepResultDict(TypedDict):
    """`StepResult`: one attempt of one step."""

    step_index: int
    goal_index: int
    success: bool
    summary: str
    agent_type: str | None
    program: str | None
    fallback: str | None
    step_type: str
    changed_files: list[str]
    attempt: int
    revision: int
    findings: str
    title: str
    base_tree: str | None
    completed_operations: list[int]


class EvaluationCheckDict(TypedDict):
    name: str
    status: str
    message: str


class EpicReviewDict(TypedDict):
    """The review of an epic's whole change (`ReviewVerdict`, or why there was none)."""

    status: str
    """"approved", "rejected" or "no_verdict"."""
    issues: list[str]
    summary: str
    round: int
    """1 for the review after the last planned goal, 2 after the first fix-up goal, …"""
    goals: int
    """How many goals the plan had when it was reviewed: a goal added since is reviewed again."""


class EvaluationDict(TypedDict):
    """`Evaluation` of the last attempt."""

    acceptable: bool
    checks: list[EvaluationCheckDict]
    feedback: str


class RecoveryDict(TypedDict):
    """`Recovery`: what was decided after a failure."""

    action: str
    goal_index: int
    step_index: int
    attempt: int
    failure: str
    analysis: str
    root_cause: str
    confidence: float | None
    hint: str
    source: str
    note: str
    keep_changes: bool


class GoalSummaryDict(TypedDict):
    """`GoalSummary` of a finished goal."""

    goal_id: str
    title: str
    summary: str
    changed_files: list[str]
    key_decisions: list[str]
    tree: NotRequired[str | None]
    """The workspace's git tree once the goal was done (its commit's content); None without git."""


class DesignDict(TypedDict):
    """A generative request's design document (design writes it; approve_plan, git and the report read)."""

    path: str
    """Its path in the workspace."""
    summary: str
    tree: str | None
    """The workspace's content once it was written: its commit (the first of the run's)."""


class WaveDict(TypedDict):
    """Goals running side by side (select_goal writes it as the wave starts; run_goal and merge_wave read)."""

    number: int
    """1-based wave of the approved plan."""
    goals: list[str]
    """Ids of the goals running in it, in plan order (the merge order)."""
    base_tree: str
    """The main workspace's content as the wave began: every goal's worktree starts from it."""
    base_commit: str
    """An unreachable commit of `base_tree`: the worktrees' branches start at it, merges go from it."""


class WaveGoalDict(TypedDict):
    """How one goal of a wave ended in its worktree (run_goal appends; merge_wave and select_goal read)."""

    wave: int
    goal_id: str
    status: str
    """"done" (its tree is merged after the wave), "failed" (runs again on its own, with `reason`),
    "conflict" (did not merge: runs again on its own on the merged result), "merged"."""
    tree: str | None
    """The goal's worktree content as it ended (run_goal); after the merge, the merged content."""
    reason: str
    summary: NotRequired[GoalSummaryDict | None]
    """The goal's summary from its worktree (merge_wave adds it to the finished goals once merged)."""
    halt: NotRequired[dict[str, str] | None]
    """A halt of the whole run met inside the goal (budget, model outage): merge_wave halts the run."""


class CommitApprovalDict(TypedDict, total=False):
    """`ApprovalDecision` of a commit gate approved with more work, plus the branch it named."""

    approved: bool
    modification: str | None
    reason: str | None
    branch: str | None


class PlannedTestsDict(TypedDict):
    """Which command runs the project's tests (`require_tests`): find_tests writes it, the checks
    read it through `app/graph/rules/test_plan.py`."""

    command: str | list[str]
    """A shell command line (run with `sh -c`) or an argv."""
    source: str
    """Where it came from, in words ("Python test files at the root", "your answer")."""
    origin: str
    """environment | user | remembered | detected (`test_plan.Origin`)."""
