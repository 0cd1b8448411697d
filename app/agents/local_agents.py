"""Which program runs a step of each agent type on the local runner, with which model.

The planner picks an agent type per step (aider / openhands / claude / junie). Without a cluster
those types resolve through `LOCAL_AGENTS` to a program (`programs/`): each is installed on first
use into `.cache/agents/` and talks to the local LLM (the embedded model or Ollama) or, for a
program with its own credentials, its provider. `LOCAL_AGENT_COMMAND` replaces all of them with
one command (the tests' deterministic agent). A type mapped to a name with no program here (e.g.
`junie`) runs that name from PATH. `describe()` is what `/health` and the start-up log show.
"""

from __future__ import annotations

import asyncio
import json
from typing import cast

from app.agents.programs import AgentInstallError, LocalProgram, Log
from app.agents.programs.aider import AiderProgram
from app.config import Settings


class LocalAgents:
    def __init__(self, settings: Settings, programs: dict[str, LocalProgram] | None = None) -> None:
        self._settings = settings
        self.programs: dict[str, LocalProgram] = programs if programs is not None else {
            "aider": AiderProgram(settings),
        }
        self._install_locks: dict[str, asyncio.Lock] = {}

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
        name = self.program(agent_type)
        if name == "command":
            return "command: " + " ".join(self._settings.local_agent_command)
        program = self.programs.get(name)
        if program is None:
            return f"{name} (from PATH, model {self._settings.agent_models.get(name) or 'its default'})"
        return program.describe()

    async def env(self, agent_type: str, *, log: Log) -> dict[str, str]:
        """The variables that make the entrypoint run the resolved program (installed first).

        Raises AgentInstallError when the program is needed and cannot be installed.
        """
        name = self.program(agent_type)
        if name == "command":
            return {"AGENT_TYPE": agent_type, "AGENT_COMMAND": json.dumps(self._settings.local_agent_command),
                    "AGENT_MODEL": self._settings.agent_models.get(agent_type, "")}
        program = self.programs.get(name)
        if program is None:
            return {"AGENT_TYPE": name, "AGENT_MODEL": self._settings.agent_models.get(name, "")}
        await self.ensure(program, log)
        return program.env()

    async def ensure(self, program: LocalProgram, log: Log) -> None:
        """Install `program` unless it is installed; one install per program in this process (the
        installers' file locks cover other processes)."""
        if program.installed():
            return
        loop = asyncio.get_running_loop()

        def from_thread(line: str) -> None:  # progress lines reach the run's stream on its own loop
            loop.call_soon_threadsafe(log, line)

        async with self._install_locks.setdefault(program.name, asyncio.Lock()):
            if not program.installed():
                await asyncio.to_thread(program.install, from_thread)


__all__ = ["AgentInstallError", "LocalAgents"]
