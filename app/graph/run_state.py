"""What a node knows of its run: the state's common reads (the task, the current goal and step, the
run's key, thread and language, whether the cloud may take a step), the counters a new step starts
from, and the run's event stream. The runs (app/runs) read the same way.

The state's keys themselves are read through typed parts (app/graph/state_access.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.config import get_config, get_stream_writer
from langgraph.runtime import Runtime

from app.config import Settings
from app.graph.context import RunContext
from app.graph.state import OrchestratorState
from app.graph.state_access import Attempts, Intake, Position, rules_of
from app.graph.state_parts import GoalDict, StepDict, TaskDict
from app.llm.scope import current_scope
from app.texts.language import choose_language

NodeRuntime = Runtime[RunContext]


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
    return bool(rules_of(state).get("auto_use_anthropic") or Intake.of(state).allow_cloud_prompt)


#: The cloud providers a run's rules and scope speak of (app/llm/scope.py).
CLOUD_PROVIDERS = ("anthropic", "openai", "gemini")


def agent_cloud(state: OrchestratorState) -> list[str]:
    """The cloud providers a step's agent may use (`AgentJob.cloud_providers`): those the run's LLM
    scope allows (project rules, a request naming the cloud, an approved escalation), and Anthropic
    wherever the agent table may give a step to Claude (`cloud_allowed`)."""
    scope = current_scope()
    allowed = {provider for provider in CLOUD_PROVIDERS if scope.allows(provider)}
    return sorted(allowed | ({"anthropic"} if cloud_allowed(state) else set()))


def current_goal(state: OrchestratorState) -> GoalDict:
    position = Position.of(state)
    return position.goals[position.current_goal_index]


def current_step(state: OrchestratorState) -> StepDict:
    position = Position.of(state)
    return position.steps[position.current_step_index]


def reset_step_counters() -> dict[str, Any]:
    """A new step starts: first attempt, no extra attempts granted, no question asked yet."""
    fresh = Attempts()
    return {"attempt": fresh.attempt, "extra_attempts": fresh.extra_attempts, "cap_asked": fresh.cap_asked}
