"""The MCP config a step names (Claude Code's and Junie's KB server): a missing file would abort the
agent, so it is passed only when it is there."""

from __future__ import annotations

from pathlib import Path

from .common import log
from .config import Step


def mcp_config_path(workspace: Path, step: Step) -> Path | None:
    """The MCP config named in task.json, if it exists (a missing one would abort the agent)."""
    if step.mcp_config is None:
        return None
    path = (workspace / step.mcp_config).resolve()
    if path.is_file():
        return path
    log(f"MCP config {step.mcp_config} not found; running without it")
    return None
