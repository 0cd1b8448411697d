"""How the step's agent is started: its command line (or AGENT_COMMAND instead) and the environment
it needs to run unattended."""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..config import Config, Step
from .aider import aider_argv
from .claude import claude_argv
from .junie import junie_argv
from .openhands import openhands_argv


def agent_argv(config: Config, step: Step, in_git: bool) -> list[str]:
    """The non-interactive command line of each agent (AGENT_COMMAND replaces it entirely)."""
    if config.command:
        return [*config.command, *config.extra_args] if config.agent_type != "command" else config.command
    builders = {"aider": aider_argv, "claude": claude_argv, "openhands": openhands_argv, "junie": junie_argv}
    return [*builders[config.agent_type](config, step, in_git), *config.extra_args]


def agent_env(config: Config, base: Mapping[str, str]) -> dict[str, str]:
    """The agent's environment: everything passed through, plus per-agent defaults it needs to run
    unattended (all overridable by the pod's own values)."""
    env = dict(base)
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-map download at import time
    if config.agent_type == "claude" and hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("IS_SANDBOX", "1")  # claude refuses bypassPermissions as root otherwise
    if config.agent_type == "openhands" and config.model:
        env.setdefault("LLM_MODEL", config.model)
    # The Job passes the local LLM as OLLAMA_URL; litellm inside aider / OpenHands reads these names.
    if base.get("OLLAMA_URL") and config.agent_type in ("aider", "openhands"):
        env.setdefault("OLLAMA_API_BASE", base["OLLAMA_URL"])
        if config.agent_type == "openhands":
            env.setdefault("LLM_BASE_URL", base["OLLAMA_URL"])
    return env
