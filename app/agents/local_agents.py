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
from dataclasses import dataclass
from typing import cast

from app.agents.programs import AgentInstallError, LocalProgram, Log
from app.agents.programs.aider import AiderProgram
from app.agents.programs.claude import ClaudeCodeProgram
from app.agents.programs.openhands import OpenHandsProgram
from app.config import Settings

#: What runs a step whose program cannot be installed: the local Aider, which needs only PyPI.
FALLBACK = "aider"


@dataclass(frozen=True)
class Resolved:
    """The program chosen for a step, its entrypoint variables, and why it is not the planned one."""

    program: str
    env: dict[str, str]
    fallback: str | None = None


class LocalAgents:
    def __init__(self, settings: Settings, programs: dict[str, LocalProgram] | None = None) -> None:
        self._settings = settings
        self.programs: dict[str, LocalProgram] = programs if programs is not None else {
            "aider": AiderProgram(settings),
            "openhands": OpenHandsProgram(settings),
            "claude": ClaudeCodeProgram(settings),
        }
        self._install_locks: dict[str, asyncio.Lock] = {}
        self.fallbacks: dict[str, str] = {}
        """Program → why it could not be installed (its steps run `FALLBACK` until an install works)."""

    def program(self, agent_type: str, *, planned: bool = False) -> str:
        """`command` when LOCAL_AGENT_COMMAND is set, else the program LOCAL_AGENTS maps the type
        to, or (unless `planned`) the fallback that replaced it when its install failed."""
        if self._settings.local_agent_command:
            return "command"
        agents = cast("dict[str, str]", self._settings.local_agents)  # keyed by AgentName; any str may be asked
        name = agents.get(agent_type, agent_type)
        return FALLBACK if not planned and name in self.fallbacks else name

    def describe(self) -> dict[str, str]:
        """Agent type → what runs it, e.g. `aider (aider-chat==0.86.2, ollama_chat/qwen…; installed)`."""
        return {agent_type: self._describe(agent_type) for agent_type in self._settings.agent_concurrency}

    def _describe(self, agent_type: str) -> str:
        name = self.program(agent_type, planned=True)
        if name == "command":
            return "command: " + " ".join(self._settings.local_agent_command)
        program = self.programs.get(name)
        if program is None:
            return f"{name} (from PATH, model {self._settings.agent_models.get(name) or 'its default'})"
        if name in self.fallbacks and (fallback := self.programs.get(FALLBACK)) is not None:
            return f"{fallback.describe()} in place of {name} ({self.fallbacks[name]})"
        return program.describe()

    async def env(self, agent_type: str, *, log: Log) -> dict[str, str]:
        """The variables that make the entrypoint run the resolved program (installed first).

        Raises AgentInstallError when the program is needed and cannot be installed.
        """
        return (await self.resolve(agent_type, log=log)).env

    async def resolve(self, agent_type: str, *, log: Log) -> Resolved:
        """The program for a step of `agent_type`, installed, with the entrypoint's variables.

        A mapped program that cannot be installed gives way to the local Aider, and the reason is
        kept: this step and the later ones say what runs instead and why (`fallbacks`). Raises
        AgentInstallError when neither can be installed.
        """
        name = self.program(agent_type, planned=True)
        if name == "command":
            return Resolved("command", {"AGENT_TYPE": agent_type,
                                        "AGENT_COMMAND": json.dumps(self._settings.local_agent_command),
                                        "AGENT_MODEL": self._settings.agent_models.get(agent_type, "")})
        program = self.programs.get(name)
        if program is None:
            return Resolved(name, {"AGENT_TYPE": name, "AGENT_MODEL": self._settings.agent_models.get(name, "")})
        try:
            await self.ensure(program, log)
        except AgentInstallError as exc:
            fallback = self.programs.get(FALLBACK)
            if fallback is None or fallback is program:
                raise
            reason = f"{name} could not be installed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            self.fallbacks[name] = reason
            log(f"{reason}; {FALLBACK} runs this step instead")
            await self.ensure(fallback, log)
            return Resolved(FALLBACK, fallback.env(), reason)
        self.fallbacks.pop(name, None)
        return Resolved(name, program.env())

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
