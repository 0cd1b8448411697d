"""Internal domain models (spec §20.1). They live in the graph state as plain dicts (checkpoint
serialisation), and are validated back into these models where a node needs them."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator


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


class _Lenient(BaseModel):
    """LLM output is parsed into these: unknown keys are ignored, enums are case-folded."""

    model_config = ConfigDict(extra="ignore", use_enum_values=True)


def _fold(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


Folded = BeforeValidator(_fold)


class CodingTask(BaseModel):
    id: str
    client_id: str
    project_id: str | None = None
    workspace_path: str
    query: str
    agent_preference: str = "auto"


class Classification(_Lenient):
    """The JSON keys of spec §7.1, exactly."""

    task_category: Annotated[TaskCategory, Folded] = TaskCategory.ADVICE
    task_action: Annotated[TaskAction, Folded] = TaskAction.RESPOND
    external_refs: list[str] = Field(default_factory=list)
    complexity: Annotated[Complexity, Folded] = Complexity.MEDIUM
    goal_clear: bool = True
    clarification_questions: list[str] = Field(default_factory=list)
    reasoning: str = ""

    @field_validator("clarification_questions", "external_refs", mode="before")
    @classmethod
    def _strings(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, list):
            return [q.get("question", str(q)) if isinstance(q, dict) else str(q) for q in value]
        return [str(value)]


class TrackerOperation(_Lenient):
    op: str = "create"  # create | update | comment
    title: str | None = None
    description: str = ""
    issue_key: str | None = None
    status: str | None = None
    comment: str | None = None
    type: str = "task"


class CodingStep(_Lenient):
    index: int = 0
    instructions: str
    step_type: Annotated[StepType, Folded] = StepType.CODE
    agent_type: str | None = None
    files: list[str] = Field(default_factory=list)
    tracker_operations: list[TrackerOperation] = Field(default_factory=list)
    expects_changes: bool = True
    """A code step that changes nothing has failed, unless the planner said it only inspects."""


class Goal(_Lenient):
    id: str
    title: str
    description: str = ""
    complexity: Annotated[Complexity, Folded] = Complexity.MEDIUM
    dependencies: list[str] = Field(default_factory=list)

    @field_validator("id", mode="before")
    @classmethod
    def _id_str(cls, value: Any) -> Any:
        return str(value)

    @field_validator("dependencies", mode="before")
    @classmethod
    def _deps(cls, value: Any) -> Any:
        return [str(v) for v in value] if isinstance(value, list) else []


class GoalPlan(_Lenient):
    goals: list[Goal] = Field(min_length=1)

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
    steps: list[CodingStep] = Field(min_length=1)


class StepResult(BaseModel):
    step_index: int
    goal_index: int = 0
    success: bool
    summary: str
    agent_type: str | None = None
    step_type: str = StepType.CODE.value
    changed_files: list[str] = Field(default_factory=list)


class EvaluationCheck(BaseModel):
    name: str
    status: CheckStatus
    message: str = ""


class Evaluation(BaseModel):
    acceptable: bool
    checks: list[EvaluationCheck] = Field(default_factory=list)


class GoalSummary(BaseModel):
    goal_id: str
    title: str
    summary: str
    changed_files: list[str] = Field(default_factory=list)
    key_decisions: list[str] = Field(default_factory=list)


class EvidencePack(BaseModel):
    kb_results: list[dict[str, str]] = Field(default_factory=list)
    tracker_artifacts: list[dict[str, str]] = Field(default_factory=list)
    chat_history_summary: str = ""
    external_refs: list[str] = Field(default_factory=list)
    facts: list[str] = Field(default_factory=list)
    unknowns: list[str] = Field(default_factory=list)


class FinalReport(_Lenient):
    summary: str
