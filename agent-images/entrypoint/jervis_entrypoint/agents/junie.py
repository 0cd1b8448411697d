"""Junie's command line: one batch task on the workspace."""

from __future__ import annotations

from ..config import Config, Step
from ..mcp import mcp_config_path
from .prompt import prompt_arg


def junie_argv(config: Config, step: Step, in_git: bool) -> list[str]:
    """The Junie CLI, one batch task on this project, without its self-update check."""
    argv = ["junie", "--task", prompt_arg(step), "--project", str(config.workspace), "--skip-update-check"]
    mcp = mcp_config_path(config.workspace, step)
    if mcp is not None:
        argv += ["--mcp-location", str(mcp)]
    if config.model:
        argv += ["--model", config.model]
    return argv
