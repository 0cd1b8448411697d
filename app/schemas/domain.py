"""Internal domain models (spec §20.1). They live in the graph state as plain dicts (checkpoint
serialisation), and are validated back into these models where a node needs them."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, field_validator


class TaskCategory(StrEnum):
    ADVICE = "advice"
    SINGLE_TASK = "single_task"
    EPIC = "epic"
    GENERATIVE = "generative"


class TaskAction(StrEnum):
    RESPOND = "respond"
    CODE = "code"
    TRACKER_OPS = "tracker_ops"
    MIXED = "mixed"


class Complexity(StrEnum):
    SIMPLE = "simple"
    MEDIUM = "medium"
    COMPLEX = "complex"
    CRITICAL = "critical"


class StepType(StrEnum):
    RESPOND = "respond"
    CODE = "code"
    TRACKER = "tracker"


class CheckStatus(StrEnum):
    PASSED = "passed"
    WARNING = "warning"
    BLOCKED = "blocked"
    FAILED = "failed"


class RecoveryAction(StrEnum):
    """What happens after a failed step (spec 000, ReflectionEngine), plus the run's own `stop`."""

    RETRY = "retry"
    RETRY_MODIFIED = "retry_modified"
    REPLANNING = "replanning"
    ASK_USER = "ask_user"
    SKIP_STEP = "skip_step"
    STOP = "stop"


class _Lenient(BaseModel):
    """LLM output is parsed into these: unknown keys are ignored, enums are case-folded."""

    model_config = ConfigDict(extra="ignore", use_enum_values=True)


def _fold(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


Folded = BeforeValidator(_fold)


#: The longest string bound llama.cpp's grammar parser takes (llama-cpp-python writes maxLength n as
#: n nested optional characters): a step plan with 1200-character instructions was refused ("number
#: of rules that are going to be repeated ... exceeds sane defaults") and the embedded server died.
GRAMMAR_MAX_LENGTH = 1000


def bounded(max_length: int | None = None, *, items: int | None = None, item_length: int | None = None) -> Any:
    """JSON-schema bounds the model's grammar enforces (a string's length, a list's items) without
    validating them: a grammar-constrained small model stops there instead of looping to its cap
    (llama.cpp honours maxLength and maxItems); a larger model without a grammar that writes more
    is still understood. A string bound above `GRAMMAR_MAX_LENGTH` is refused where it is written."""
    if max(max_length or 0, item_length or 0) > GRAMMAR_MAX_LENGTH:
        raise ValueError(f"a string bound above {GRAMMAR_MAX_LENGTH} breaks llama.cpp's grammar parser")
    extra: dict[str, Any] = {}
    if max_length is not None:
        extra["maxLength"] = max_length
    if items is not None:
        extra["maxItems"] = items
    if item_length is not None:
        extra["items"] = {"type": "string", "maxLength": item_length}
    return extra


class CodingTask(BaseModel):
    id: str
    client_id: str
    project_id: str | None = None
    workspace_path: str
    query: str
    agent_preference: str = "auto"
    client_name: str | None = None
    project_name: str | None = None
    language: str | None = None
    """The response language, decided at dispatch (configured, or the request's own)."""
    budget_limits: dict[str, float | None] | None = None
    """`BudgetLimits` of the run: the settings' merged with the request's."""


class Classification(_Lenient):
    """The JSON keys of spec §7.1, exactly. Category and action are required: an empty or
    misnamed answer must fail validation (and be repaired), never become silent advice.
    Names small models use instead ("category", "action") are accepted."""

    task_category: Annotated[TaskCategory, Folded] = Field(
        validation_alias=AliasChoices("task_category", "category", "taskCategory"))
    task_action: Annotated[TaskAction, Folded] = Field(
        validation_alias=AliasChoices("task_action", "action", "taskAction"))
    external_refs: list[str] = Field(default_factory=list, json_schema_extra=bounded(items=5, item_length=80))
    complexity: Annotated[Complexity, Folded] = Complexity.MEDIUM
    goal_clear: bool = True
    clarification_questions: list[str] = Field(default_factory=list,
                                               json_schema_extra=bounded(items=3, item_length=200))
    reasoning: str = Field(default="", json_schema_extra=bounded(200))

    @field_validator("clarification_questions", "external_refs", mode="before")
    @classmethod
    def _strings(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, list):
            return [q.get("question", str(q)) if isinstance(q, dict) else str(q) for q in value]
        return [str(value)]


class TrackerOperation(_Lenient):
    op: str = Field(default="create", json_schema_extra=bounded(10))  # create | update | comment
    title: str | None = Field(default=None, json_schema_extra=bounded(120))
    description: str = Field(default="", json_schema_extra=bounded(600))
    issue_key: str | None = Field(default=None, json_schema_extra=bounded(40))
    status: str | None = Field(default=None, json_schema_extra=bounded(40))
    comment: str | None = Field(default=None, json_schema_extra=bounded(600))
    type: str = Field(default="task", json_schema_extra=bounded(20))


class CodingStep(_Lenient):
    index: int = 0
    instructions: str = Field(json_schema_extra=bounded(1000))
    step_type: Annotated[StepType, Folded] = StepType.CODE
    agent_type: str | None = None
    files: list[str] = Field(default_factory=list, json_schema_extra=bounded(items=8, item_length=160))
    tracker_operations: list[TrackerOperation] = Field(default_factory=list, json_schema_extra=bounded(items=5))
    expects_changes: bool = True
    """A code step that changes nothing has failed, unless the planner said it only inspects,
    analyses or runs something; such a step passes without a diff and its findings reach the
    following steps."""
    critical: bool = True
    """Only a step the plan marks non-critical may be skipped by reflection (the user may skip any)."""
    revision: int = 0
    """Which replanning produced the step (0 = the first plan): part of its agent Job's identity."""


class Goal(_Lenient):
    id: str = Field(json_schema_extra=bounded(24))
    title: str = Field(json_schema_extra=bounded(120))
    description: str = Field(default="", json_schema_extra=bounded(500))
    complexity: Annotated[Complexity, Folded] = Complexity.MEDIUM
    dependencies: list[str] = Field(default_factory=list, json_schema_extra=bounded(items=6, item_length=24))

    @field_validator("id", mode="before")
    @classmethod
    def _id_str(cls, value: Any) -> Any:
        return str(value)

    @field_validator("dependencies", mode="before")
    @classmethod
    def _deps(cls, value: Any) -> Any:
        return [str(v) for v in value] if isinstance(value, list) else []


class GoalPlan(_Lenient):
    goals: list[Goal] = Field(min_length=1, json_schema_extra=bounded(items=8))

    @field_validator("goals")
    @classmethod
    def _unique_ids(cls, goals: list[Goal]) -> list[Goal]:
        """Models repeat ids; a repeated one gets a suffix so dependencies stay unambiguous."""
        seen: set[str] = set()
        for goal in goals:
            base, n = goal.id, 2
            while goal.id in seen:
                goal.id = f"{base}-{n}"
                n += 1
            seen.add(goal.id)
        return goals


class StepPlan(_Lenient):
    steps: list[CodingStep] = Field(min_length=1, json_schema_extra=bounded(items=6))


class StepResult(BaseModel):
    """One attempt of one step. Failed attempts stay in the list (the report tells the story);
    only successful ones count as work done (a skipped step's attempts all failed)."""

    step_index: int
    goal_index: int = 0
    success: bool
    """The attempt succeeded: the agent's own verdict, then evaluate's (checks, tests, review)."""
    summary: str
    agent_type: str | None = None
    program: str | None = None
    """The program that ran it when not the type's own (the local runner's mapping or fallback)."""
    fallback: str | None = None
    """Why `program` ran in place of the one mapped to the type (its install failed)."""
    step_type: str = StepType.CODE.value
    changed_files: list[str] = Field(default_factory=list)
    attempt: int = 1
    revision: int = 0
    """Plan revision of the step (with goal, step and attempt: the result's identity)."""
    findings: str = ""
    """What an inspect / analyse / run step found (bounded), handed to the following steps."""
    title: str = ""
    """The step's instructions, shortened, for reports."""
    base_tree: str | None = None
    """Git tree of the workspace when the step started: its diff and its undo."""
    completed_operations: list[int] = Field(default_factory=list)
    """Tracker steps: indices of operations that succeeded (a retry does not repeat them)."""


class EvaluationCheck(BaseModel):
    name: str
    status: CheckStatus
    message: str = ""


class Evaluation(BaseModel):
    acceptable: bool
    checks: list[EvaluationCheck] = Field(default_factory=list)
    feedback: str = ""
    """Why the step failed, as the next attempt and the reflection read it (bounded)."""


class ReviewVerdict(_Lenient):
    """The reviewer's JSON (`require_review`)."""

    approved: bool
    issues: list[str] = Field(default_factory=list, json_schema_extra=bounded(items=5, item_length=240))
    summary: str = Field(default="", json_schema_extra=bounded(240))

    @field_validator("issues", mode="before")
    @classmethod
    def _issue_strings(cls, value: Any) -> Any:
        if value is None:
            return []
        return [str(v) for v in value] if isinstance(value, list) else [str(value)]


class Reflection(_Lenient):
    """The reflection's JSON: exactly the keys of spec 000's ReflectionEngine."""

    analysis: str = Field(default="", json_schema_extra=bounded(300))
    root_cause: str = Field(default="", json_schema_extra=bounded(300))
    suggested_action: Annotated[RecoveryAction, Folded]
    confidence: float = 0.5
    modification_hint: str = Field(default="", json_schema_extra=bounded(500))

    @field_validator("confidence", mode="before")
    @classmethod
    def _clamp(cls, value: Any) -> Any:
        try:
            return min(1.0, max(0.0, float(value)))
        except (TypeError, ValueError):
            return 0.5

    @field_validator("analysis", "root_cause", "modification_hint", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return "" if value is None else str(value)

    @field_validator("suggested_action")
    @classmethod
    def _no_stop(cls, value: RecoveryAction) -> RecoveryAction:
        if value == RecoveryAction.STOP:  # the run decides to stop, never the model
            raise ValueError("suggested_action must be one of retry, retry_modified, replanning, ask_user, skip_step")
        return value


class Recovery(BaseModel):
    """The decision after a failed step, as the graph routes on it."""

    action: RecoveryAction
    goal_index: int = 0
    step_index: int = 0
    attempt: int = 0
    """The attempt that failed (0: no step failed, e.g. a plan refused with a reason)."""
    failure: str
    """What went wrong (the evaluation's feedback, or the user's reason; bounded)."""
    analysis: str = ""
    root_cause: str = ""
    confidence: float | None = None
    hint: str = ""
    """How the next attempt should differ (the reflection's modification hint, or the user's words)."""
    source: str = "llm"
    """llm | fallback | rule | user | cap: who decided."""
    keep_changes: bool = False
    """A retry works on top of the failed attempt's change (its tests failed, nothing else: the next
    attempt fixes it, as a test loop would) instead of from the step's start."""
    note: str = ""
    """Why a suggestion was overruled (a cap, a critical step), for the SSE stream and the report."""


class RecoveryChoice(_Lenient):
    """The LLM's reading of a user's answer to a recovery question."""

    suggested_action: Annotated[RecoveryAction, Folded]
    hint: str = Field(default="", json_schema_extra=bounded(300))

    @field_validator("hint", mode="before")
    @classmethod
    def _hint_text(cls, value: Any) -> Any:
        return "" if value is None else str(value)


class ApprovalDecision(BaseModel):
    """An answer to an approval gate, interpreted (app/graph/rules/approval.py)."""

    approved: bool
    modification: str | None = Field(default=None, json_schema_extra=bounded(300))
    """The condition or change the user attached ("ale ne do mastera", "přidej testy")."""
    reason: str | None = Field(default=None, json_schema_extra=bounded(300))
    """The user's words after a refusal ("ne, udělej to bez nové závislosti" → the rest)."""


class DesignDecision(_Lenient):
    decision: str = Field(json_schema_extra=bounded(200))
    reason: str = Field(default="", json_schema_extra=bounded(200))


class DesignPlan(GoalPlan):
    """A generative request's design: the document's content and the goals built from it."""

    summary: str = Field(default="", json_schema_extra=bounded(300))
    context: str = Field(default="", json_schema_extra=bounded(500))
    decisions: list[DesignDecision] = Field(default_factory=list, json_schema_extra=bounded(items=6))
    interfaces: list[str] = Field(default_factory=list, json_schema_extra=bounded(items=6, item_length=200))


class GoalSummary(BaseModel):
    goal_id: str
    title: str
    summary: str
    changed_files: list[str] = Field(default_factory=list)
    key_decisions: list[str] = Field(default_factory=list)
    tree: str | None = None
    """The workspace's content (a git tree) once this goal was done: its own commit (git_operations)."""


class EvidencePack(BaseModel):
    kb_results: list[dict[str, str]] = Field(default_factory=list)
    tracker_artifacts: list[dict[str, str]] = Field(default_factory=list)
    chat_history_summary: str = ""
    external_refs: list[str] = Field(default_factory=list)
    facts: list[str] = Field(default_factory=list)
    unknowns: list[str] = Field(default_factory=list)
    earlier_run: str = ""
    """How the previous request in the same chat ended (its run's final report, bounded)."""


class FinalReport(_Lenient):
    summary: str
