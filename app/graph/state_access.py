"""The run's state read through typed parts: the keys read together form one part, each key's
default declared once beside its field, built from the state by `Part.of(state)` (a key the state
does not hold, or holds as None, reads as its default). The channels stay the state's keys
(app/graph/state.py), so a checkpoint reads the same before and after; nodes still return plain
updates keyed by them. No LangGraph here: the pure rules (app/graph/rules) read the state too."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Self

from app.graph.state import FailureRecord, Halt, SkipRecord
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
    Rules,
    StepDict,
    StepResultDict,
    WaveDict,
    WaveGoalDict,
)


class _Part:
    """A group of state keys read at once: each field is a key, its default the key's."""

    @classmethod
    def of(cls, state: Mapping[str, Any]) -> Self:
        return cls(**{f.name: value for f in fields(cls)  # type: ignore[arg-type]
                      if (value := state.get(f.name)) is not None})


@dataclass(frozen=True, slots=True)
class Position(_Part):
    """Where the run is in its plan (plan, plan_steps, replan and advance_* write these)."""

    goals: list[GoalDict] = field(default_factory=list)
    current_goal_index: int = 0
    steps: list[StepDict] = field(default_factory=list)
    """The current goal's steps."""
    current_step_index: int = 0


@dataclass(frozen=True, slots=True)
class WorkDone(_Part):
    """What the run has done so far (execute_step and evaluate append results, advance_goal summaries)."""

    step_results: list[StepResultDict] = field(default_factory=list)
    goal_summaries: list[GoalSummaryDict] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Attempts(_Part):
    """The counters that bound a run's recovery (reflect, ask_user and clarify raise them; a new step
    resets the first three, `reset_step_counters`)."""

    attempt: int = 1
    """1-based attempt of the current step."""
    extra_attempts: int = 0
    """Attempts the user granted beyond RECOVERY_MAX_ATTEMPTS for the current step."""
    cap_asked: bool = False
    """The user was already asked about the current step's exhausted attempts."""
    replans: int = 0
    questions: int = 0
    """Recovery questions asked in this run."""
    clarification_rounds: int = 0


def rules_of(state: Mapping[str, Any]) -> Rules:
    """The run's project rules as sent (each key read with its `ProjectRules` meaning; absent: none)."""
    rules: Rules = state.get("rules") or {}
    return rules


@dataclass(frozen=True, slots=True)
class Intake(_Part):
    """What intake and clarify learned of the request (evidence_pack, plans and answers read it)."""

    task_category: str | None = None
    task_action: str | None = None
    task_complexity: str | None = None
    external_refs: list[str] = field(default_factory=list)
    needs_clarification: bool = False
    clarification_questions: list[str] = field(default_factory=list)
    clarification_response: ClarificationDict | None = None
    project_context: str | None = None
    kb_results: list[KbHit] = field(default_factory=list)
    kb_warnings: list[str] = field(default_factory=list)
    allow_cloud_prompt: bool = False
    evidence_pack: EvidencePackDict | None = None


@dataclass(frozen=True, slots=True)
class Inputs(_Part):
    """What Kotlin sent besides the task and the rules (read-only after the start)."""

    environment: JsonObject | None = None
    jervis_project_id: str | None = None
    chat_history: ChatHistoryDict | None = None


@dataclass(frozen=True, slots=True)
class Setbacks(_Part):
    """How the work went wrong so far and what was decided (evaluate, reflect, ask_user write these)."""

    evaluation: EvaluationDict | None = None
    recovery: RecoveryDict | None = None
    failures: list[FailureRecord] = field(default_factory=list)
    skipped: list[SkipRecord] = field(default_factory=list)
    halt: Halt | None = None


@dataclass(frozen=True, slots=True)
class Waves(_Part):
    """An epic's design document, the goals running side by side, and its review."""

    design: DesignDict | None = None
    wave: WaveDict | None = None
    wave_goals: list[WaveGoalDict] = field(default_factory=list)
    epic_review: EpicReviewDict | None = None


@dataclass(frozen=True, slots=True)
class UserTerms(_Part):
    """What the user attached to an approval, and what the plan gate shows about a replan."""

    user_conditions: list[str] = field(default_factory=list)
    commit_approval: CommitApprovalDict | None = None
    replan_reason: str | None = None
    progress_floor: float = 0.0


@dataclass(frozen=True, slots=True)
class Tests(_Part):
    """The command that runs the project's tests under `require_tests`, and how long they took."""

    test_plan: PlannedTestsDict | None = None
    test_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Outcome(_Part):
    """How the run ended (git_operations and finalize write these; the status push carries them)."""

    branch: str | None = None
    commit_sha: str | None = None
    git_outcome: str | None = None
    final_result: str | None = None
    artifacts: list[str] = field(default_factory=list)
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
