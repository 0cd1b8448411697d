"""What every agent step (code, test or git) is handed: its steps numbered with their agent, the
task brief on the volume, the KB MCP server's environment, the workspace it works in."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.agents.workspace import WorkspaceError
from app.config import Settings
from app.graph.rules.agent_selection import choose_agent
from app.graph.run_state import NodeRuntime, current_thread_id, emit, task_of
from app.graph.state import OrchestratorState
from app.graph.state_parts import TaskDict
from app.schemas.domain import CodingStep, StepType


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


def workspace_root(runtime: NodeRuntime, workspace_path: str) -> Path | None:
    """The project directory when it has something in it: code changes have somewhere to go."""
    try:
        path = runtime.context.workspaces.resolve(workspace_path)
    except WorkspaceError:
        return None
    return path if path.is_dir() and any(True for _ in path.iterdir()) else None
