"""What a node knows of its run: the state's common reads (the task, the current goal and step, the
run's key, thread and language, whether the cloud may take a step), the counters a new step starts
from, and the run's event stream. The runs (app/runs) read the same way.

Keys that are read together are read as one typed part (`Position`, `WorkDone`, `Attempts`,
`rules_of`), each key's default declared once beside it: a key the state does not hold, or holds
as None, reads as that default. The channels stay the state's keys (app/graph/state.py), so a
checkpoint reads the same before and after; nodes still return plain updates keyed by them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Self

from langgraph.config import get_config, get_stream_writer
from langgraph.runtime import Runtime

from app.config import Settings
from app.graph.context import RunContext
from app.graph.state import OrchestratorState
from app.graph.state_parts import GoalDict, GoalSummaryDict, Rules, StepDict, StepResultDict, TaskDict
from app.texts.language import choose_language

NodeRuntime = Runtime[RunContext]


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


def task_of(state: OrchestratorState) -> TaskDict:
    return state["task"]


def current_thread_id() -> str:
    """The run's LangGraph thread, from the config the graph runs under: not a state key (a key
    is one more checkpoint write per run). Empty outside a graph (a node called directly)."""
    try:
        return str(get_config()["configurable"]["thread_id"])
    except (RuntimeError, KeyError):
        return ""


def run_key(state: OrchestratorState) -> str:
    """Whose context entries and tracker records these are: the run (its thread), since Kotlin
    reuses one task id for every request of a chat; the task id for a node called outside a graph."""
    return current_thread_id() or task_of(state)["id"]


def run_language(state: Mapping[str, Any], settings: Settings) -> str:
    """The run's language: decided at dispatch (`task.language`: the configured one, or with
    `auto` the request's own), else what the caller knows (`language`), else decided now the same
    way. `state` is the graph's, or what the run manager knows of it."""
    task = state.get("task") or {}
    decided = task.get("language") or state.get("language")
    if decided:
        return str(decided)
    return choose_language(settings.response_language, str(task.get("query", "")))


def emit(event: dict[str, Any]) -> None:
    """Custom event for the SSE stream (agent log lines, warnings). A no-op outside a run."""
    try:
        writer = get_stream_writer()
    except RuntimeError:
        return
    writer(event)


def cloud_allowed(state: OrchestratorState) -> bool:
    """Whether a cloud agent (Claude) may take a step by the table: the project's rules allow
    Anthropic, or the request itself asked for the cloud."""
    rules: Mapping[str, Any] = state.get("rules") or {}
    return bool(rules.get("auto_use_anthropic") or state.get("allow_cloud_prompt"))


def current_goal(state: OrchestratorState) -> GoalDict:
    return state["goals"][state.get("current_goal_index", 0)]


def current_step(state: OrchestratorState) -> StepDict:
    return state["steps"][state.get("current_step_index", 0)]


def reset_step_counters() -> dict[str, Any]:
    """A new step starts: first attempt, no extra attempts granted, no question asked yet."""
    fresh = Attempts()
    return {"attempt": fresh.attempt, "extra_attempts": fresh.extra_attempts, "cap_asked": fresh.cap_asked}
