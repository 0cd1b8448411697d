"""Helpers shared by nodes: reading the state, the contexts prompts are built from, and the
hand-over details every agent step (code, test or git) gets. Nodes import this module, never
each other."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langgraph.config import get_config, get_stream_writer
from langgraph.runtime import Runtime

from app.agents.workspace import WorkspaceError, render_environment
from app.config import Settings
from app.graph import chat
from app.graph.agent_selection import choose_agent
from app.graph.context import RunContext
from app.graph.state import OrchestratorState
from app.graph.state_parts import GoalDict, StepDict, TaskDict
from app.schemas.domain import CodingStep, StepType
from app.texts.language import choose_language

NodeRuntime = Runtime[RunContext]
CONVERSATION_CHARS = 3000


def task_of(state: OrchestratorState) -> TaskDict:
    return state["task"]


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, marked when cut."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


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


def identity(state: OrchestratorState) -> str:
    task = task_of(state)
    client = task.get("client_name") or task["client_id"]
    project = task.get("project_name") or task.get("project_id") or "-"
    return f"Client: {client}; project: {project}"


def evidence_text(state: OrchestratorState, limit: int = 3000) -> str:
    pack = state.get("evidence_pack")
    if not pack:
        return ""
    lines = [f"Earlier in this conversation (how the previous request ended): {pack['earlier_run']}"
             ] if pack.get("earlier_run") else []
    lines += [f"- [{r.get('source', '')}] {r.get('content', '')}" for r in pack.get("kb_results", [])]
    lines += [f"- {a.get('ref', '')}: {a.get('content', '')}" for a in pack.get("tracker_artifacts", [])]
    if pack.get("unknowns"):
        lines.append("Unknowns: " + "; ".join(pack["unknowns"]))
    return "\n".join(lines)[:limit]


def clarification_text(state: OrchestratorState) -> str | None:
    response = state.get("clarification_response")
    return (response.get("answer") if response else None) or None


def answer_context(state: OrchestratorState) -> str:
    """What respond and answer steps reply from: identity, KB, the whole conversation."""
    parts = [
        identity(state),
        state.get("project_context") or "",
        evidence_text(state),
        chat.full_conversation(state),
        f"User's clarification: {c}" if (c := clarification_text(state)) else "",
        render_environment(state.get("environment")) if state.get("environment") else "",
    ]
    return "\n\n".join(p for p in parts if p)


def planning_context(state: OrchestratorState) -> str:
    """What planners see: identity, KB, the conversation (bounded, newest kept) and the user's
    conditions, so "the same as yesterday, but for the orders endpoint" can be planned."""
    conversation = chat.full_conversation(state)
    if len(conversation) > CONVERSATION_CHARS:
        conversation = "…" + conversation[-CONVERSATION_CHARS:]
    conditions = state.get("user_conditions") or []
    parts = [identity(state), state.get("project_context") or "", evidence_text(state),
             f"Conversation:\n{conversation}" if conversation else "",
             f"User's clarification: {c}" if (c := clarification_text(state)) else "",
             "User's conditions: " + "; ".join(conditions) if conditions else ""]
    return "\n\n".join(p for p in parts if p)


def number_steps(steps: list[CodingStep], *, complexity: str | None, preference: str, mapping: Mapping[str, str],
                 cloud_allowed: bool, start: int = 0, revision: int = 0) -> list[dict[str, Any]]:
    """Index the steps (from `start`), mark their plan revision and pick each code step's agent
    (`choose_agent`: a table choice the project does not allow is replaced, and the stream says why)."""
    numbered = []
    choice = choose_agent(complexity, preference, mapping, cloud_allowed=cloud_allowed)
    if choice.reason and any(step.step_type == StepType.CODE for step in steps):
        emit({"type": "warning", "message": f"{choice.agent} runs the code steps: {choice.reason}"})
    for offset, step in enumerate(steps):
        step.index = start + offset
        step.revision = revision
        if step.step_type == StepType.CODE:
            step.agent_type = choice.agent
        numbered.append(step.model_dump(mode="json"))
    return numbered


def cloud_allowed(state: OrchestratorState) -> bool:
    """Whether a cloud agent (Claude) may take a step by the table: the project's rules allow
    Anthropic, or the request itself asked for the cloud."""
    rules: Mapping[str, Any] = state.get("rules") or {}
    return bool(rules.get("auto_use_anthropic") or state.get("allow_cloud_prompt"))


def current_goal(state: OrchestratorState) -> GoalDict:
    return state["goals"][state.get("current_goal_index", 0)]


def current_step(state: OrchestratorState) -> StepDict:
    return state["steps"][state.get("current_step_index", 0)]


def task_brief(state: OrchestratorState, goal_index: int, step_index: int) -> dict[str, Any]:
    """`.jervis/task.json`: who and what, for the agent and for humans reading the volume."""
    task = task_of(state)
    return {"id": task["id"], "client_id": task["client_id"], "project_id": task.get("project_id"),
            "thread_id": current_thread_id(), "goal_index": goal_index, "step_index": step_index,
            "client_name": task.get("client_name"), "project_name": task.get("project_name"),
            "query": task["query"]}


def kb_env(settings: Settings, task: TaskDict) -> dict[str, str]:
    """Environment of the KB MCP server the agent may start (tenant and URLs)."""
    return {"CLIENT_ID": task["client_id"], "PROJECT_ID": task.get("project_id") or "",
            "KB_URL": settings.knowledgebase_url, "KB_WRITE_URL": settings.kb_write_url}


def reset_step_counters() -> dict[str, Any]:
    """A new step starts: first attempt, no extra attempts granted, no question asked yet."""
    return {"attempt": 1, "extra_attempts": 0, "cap_asked": False}


def workspace_root(runtime: NodeRuntime, workspace_path: str) -> Path | None:
    """The project directory when it has something in it: code changes have somewhere to go."""
    try:
        path = runtime.context.workspaces.resolve(workspace_path)
    except WorkspaceError:
        return None
    return path if path.is_dir() and any(True for _ in path.iterdir()) else None
