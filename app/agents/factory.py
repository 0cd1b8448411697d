"""AGENT_RUNNER name → runner."""

from __future__ import annotations

from app.agents.base import AgentRunner
from app.agents.local import LocalRunner
from app.agents.workspace import WorkspaceManager
from app.config import Settings


def create_runner(settings: Settings, workspaces: WorkspaceManager) -> AgentRunner:
    if settings.agent_runner == "local":
        return LocalRunner(
            workspaces,
            command=settings.local_agent_command or None,
            extra_env={"OLLAMA_URL": settings.ollama_url, "KNOWLEDGEBASE_URL": settings.knowledgebase_url},
        )
    raise ValueError(
        f"AGENT_RUNNER={settings.agent_runner!r} is not available in this build; valid: 'local'"
    )
