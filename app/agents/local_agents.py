"""Which program runs a step of each agent type on the local runner, with which model.

The planner picks an agent type per step (aider / openhands / claude / junie). Without a cluster
those types resolve through `LOCAL_AGENTS`: by default every type runs the local Aider against
the local LLM (the embedded model or Ollama), because the others need their own installs and
cloud credentials. `LOCAL_AGENT_COMMAND` replaces all of them with one command (the tests'
deterministic agent). `describe()` is what `/health` and the start-up log show.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import cast

from app.agents.aider_install import AIDER_SPEC, AiderInstallError, aider_bin_dir, ensure_aider, is_installed
from app.config import Settings

PROJECT_ROOT = Path(__file__).resolve().parents[2]

Log = Callable[[str], None]


class LocalAgents:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        venv = Path(settings.aider_venv)
        self.aider_venv = venv if venv.is_absolute() else PROJECT_ROOT / venv
        self._install_lock = asyncio.Lock()

    def program(self, agent_type: str) -> str:
        """`command` when LOCAL_AGENT_COMMAND is set, else the agent LOCAL_AGENTS maps the type to."""
        if self._settings.local_agent_command:
            return "command"
        agents = cast("dict[str, str]", self._settings.local_agents)  # keyed by AgentName; any str may be asked
        return agents.get(agent_type, agent_type)

    def describe(self) -> dict[str, str]:
        """Agent type → what runs it, e.g. `aider (aider-chat==0.86.2, ollama_chat/qwen…; installed)`."""
        return {agent_type: self._describe(agent_type) for agent_type in self._settings.agent_concurrency}

    def _describe(self, agent_type: str) -> str:
        program = self.program(agent_type)
        if program == "command":
            return "command: " + " ".join(self._settings.local_agent_command)
        if program != "aider":
            return f"{program} (from PATH, model {self._settings.agent_models.get(program) or 'its default'})"
        state = "installed" if is_installed(self.aider_venv) else "installed on first use"
        return f"aider ({AIDER_SPEC}, model {self._aider_model()[0]}; {state} in {self.aider_venv})"

    async def env(self, agent_type: str, *, log: Log) -> dict[str, str]:
        """The variables that make the entrypoint run the resolved agent (Aider installed first).

        Raises AiderInstallError when Aider is needed and cannot be installed.
        """
        program = self.program(agent_type)
        if program == "command":
            return {"AGENT_TYPE": agent_type, "AGENT_COMMAND": json.dumps(self._settings.local_agent_command),
                    "AGENT_MODEL": self._settings.agent_models.get(agent_type, "")}
        if program != "aider":
            return {"AGENT_TYPE": program, "AGENT_MODEL": self._settings.agent_models.get(program, "")}
        bin_dir = await self._ensure_aider(log)
        model, model_env = self._aider_model()
        return {"AGENT_TYPE": "aider", "AGENT_MODEL": model, "AGENT_EXTRA_ARGS": json.dumps(self._settings.aider_args),
                "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", **model_env}

    async def _ensure_aider(self, log: Log) -> Path:
        if is_installed(self.aider_venv):
            return aider_bin_dir(self.aider_venv)
        loop = asyncio.get_running_loop()

        def from_thread(line: str) -> None:  # progress lines reach the run's stream on its own loop
            loop.call_soon_threadsafe(log, line)

        async with self._install_lock:  # one install per process; the file lock covers other processes
            return await asyncio.to_thread(ensure_aider, self.aider_venv, log=from_thread)

    def _aider_model(self) -> tuple[str, dict[str, str]]:
        """The local LLM for Aider: the OpenAI-compatible local server (the embedded model) when
        configured, else Ollama's chat API with the local tiers' model (OLLAMA_URL reaches the
        entrypoint, which hands it to litellm as OLLAMA_API_BASE)."""
        settings = self._settings
        if settings.local_llm_api_base:
            return settings.local_llm_model, {"OPENAI_API_BASE": settings.local_llm_api_base,
                                              "OPENAI_API_KEY": "local"}
        return f"ollama_chat/{settings.local_model}", {}


__all__ = ["AiderInstallError", "LocalAgents"]
