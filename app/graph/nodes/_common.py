"""Small helpers shared by nodes."""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from app.graph.context import RunContext
from app.graph.state import OrchestratorState

NodeRuntime = Runtime[RunContext]


def task_of(state: OrchestratorState) -> dict[str, Any]:
    return state["task"]


def emit(event: dict[str, Any]) -> None:
    """Custom event for the SSE stream (agent log lines, warnings). A no-op outside a run."""
    try:
        writer = get_stream_writer()
    except RuntimeError:
        return
    writer(event)


def identity(state: OrchestratorState) -> str:
    client = state.get("client_name") or task_of(state).get("client_id")
    project = state.get("project_name") or task_of(state).get("project_id") or "-"
    return f"Client: {client}; project: {project}"


def evidence_text(state: OrchestratorState, limit: int = 3000) -> str:
    pack = state.get("evidence_pack") or {}
    lines = [f"- [{r.get('source', '')}] {r.get('content', '')}" for r in pack.get("kb_results", [])]
    lines += [f"- {a.get('ref', '')}: {a.get('content', '')}" for a in pack.get("tracker_artifacts", [])]
    if pack.get("unknowns"):
        lines.append("Unknowns: " + "; ".join(pack["unknowns"]))
    return "\n".join(lines)[:limit]


def clarification_text(state: OrchestratorState) -> str | None:
    response = state.get("clarification_response") or {}
    return response.get("answer") or None


def current_goal(state: OrchestratorState) -> dict[str, Any]:
    return state["goals"][state.get("current_goal_index", 0)]


def current_step(state: OrchestratorState) -> dict[str, Any]:
    return state["steps"][state.get("current_step_index", 0)]


def changed_files(state: OrchestratorState) -> list[str]:
    """Files changed by successful code steps, in first-seen order."""
    seen: dict[str, None] = {}
    for result in state.get("step_results", []):
        if result.get("success"):
            for path in result.get("changed_files", []):
                seen.setdefault(path, None)
    return list(seen)
