"""The spec's agent choice carried through to a real program: the complexity table limited by the
agent profiles (Claude only with the cloud, Junie only by the project's choice), and the program
that really ran a step said in the stream, the step's result and the report when the local runner
had to run another one (its install failed)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from app.agent_settings import DEFAULT_AGENT_SELECTION
from app.agents.local import LocalRunner
from app.agents.local_agents import LocalAgents
from app.agents.programs import AgentInstallError, Log
from app.config import Settings
from app.graph.context import RunContext
from app.graph.rules.agent_selection import choose_agent
from tests.support import SCRIPTED_AGENT, file_block, make_git_repo
from tests.unit.graph.graph_support import start


@pytest.mark.parametrize(("complexity", "cloud", "agent"), [
    ("simple", False, "aider"), ("medium", False, "openhands"), ("complex", False, "openhands"),
    ("critical", True, "claude"), ("critical", False, "openhands"), (None, False, "openhands"),
])
def test_the_table_gives_claude_only_where_the_cloud_is_allowed(complexity: str | None, cloud: bool,
                                                                 agent: str) -> None:
    choice = choose_agent(complexity, "auto", DEFAULT_AGENT_SELECTION, cloud_allowed=cloud)
    assert choice.agent == agent
    assert ("auto_use_anthropic is off" in choice.reason) == (agent != "claude" and complexity in ("critical", None))


def test_junie_is_chosen_only_by_the_projects_preference() -> None:
    table = DEFAULT_AGENT_SELECTION | {"critical": "junie"}
    assert choose_agent("critical", "auto", table, cloud_allowed=True).agent == "claude"
    local = choose_agent("critical", "auto", table, cloud_allowed=False)
    assert local.agent == "openhands" and local.reason.startswith("junie runs only where the project chose it")
    assert choose_agent("simple", "junie", table, cloud_allowed=False).agent == "junie"
    assert choose_agent("simple", "claude", table, cloud_allowed=False).agent == "claude"  # explicit: stands


class Uninstallable:
    """A program whose install fails the way a missing interpreter does."""

    name = "openhands"

    def installed(self) -> bool:
        return False

    def install(self, log: Log) -> None:
        raise AgentInstallError("no Python >= 3.12 on this machine (install python3.12)")

    def env(self) -> dict[str, str]:
        raise AssertionError("never installed, never run")

    def describe(self) -> str:
        return "openhands (installed on first use)"


class ScriptedAider:
    """The fallback program: the tests' scripted agent standing in for Aider (no model needed)."""

    name = "aider"

    def installed(self) -> bool:
        return True

    def install(self, log: Log) -> None:
        raise AssertionError("installed")

    def env(self) -> dict[str, str]:
        return {"AGENT_TYPE": "command", "AGENT_COMMAND": json.dumps(SCRIPTED_AGENT)}

    def describe(self) -> str:
        return "aider (scripted)"


def agents_with_fallback(settings: Settings) -> LocalAgents:
    return LocalAgents(settings, programs={"openhands": Uninstallable(), "aider": ScriptedAider()})


async def test_a_program_that_cannot_be_installed_gives_way_to_aider_and_says_why() -> None:
    settings = Settings(local_agents={"aider": "aider", "openhands": "openhands", "claude": "aider", "junie": "aider"})
    agents = agents_with_fallback(settings)
    assert agents.program("openhands") == "openhands"
    lines: list[str] = []

    resolved = await agents.resolve("openhands", log=lines.append)

    assert resolved.program == "aider" and resolved.env["AGENT_TYPE"] == "command"
    assert resolved.fallback == ("openhands could not be installed: "
                                 "no Python >= 3.12 on this machine (install python3.12)")
    assert lines == [f"{resolved.fallback}; aider runs this step instead"]
    assert agents.program("openhands") == "aider"  # later steps say so before they start
    assert agents.describe()["openhands"] == f"aider (scripted) in place of openhands ({resolved.fallback})"


@pytest.mark.settings(local_agent_command=[], reflection_from_attempt=1,
                      local_agents={"aider": "aider", "openhands": "openhands", "claude": "aider", "junie": "aider"})
async def test_the_step_result_the_stream_and_the_report_name_the_program_that_ran(
        graph: Any, ctx: RunContext, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "clients/c1/fallback")
    (repo / "calc.py").write_text("def add(a, b):\n    raise NotImplementedError\n")
    runner = LocalRunner(ctx.workspaces, ctx.settings, agents=agents_with_fallback(ctx.settings))
    context = dataclasses.replace(ctx, runner=runner)
    query = "Implement add() in calc.py\n" + file_block("calc.py", "def add(a, b):\n    return a + b")
    state, config = start(query, workspace_path="clients/c1/fallback", agent_preference="openhands")
    events: list[dict[str, Any]] = []

    async for mode, chunk in graph.astream(state, config, context=context, stream_mode=["custom", "updates"]):
        if mode == "custom":
            events.append(chunk)

    values = (await graph.aget_state(config)).values
    [result] = values["step_results"]
    assert result["success"] and result["agent_type"] == "openhands" and result["program"] == "aider"
    assert result["fallback"].startswith("openhands could not be installed: no Python >= 3.12")
    [begun] = [e for e in events if e["type"] == "agent_start"]
    assert (begun["agent"], begun["program"]) == ("openhands", "openhands")  # planned; the install decides
    assert {e["agent"] for e in events if e["type"] == "agent_log"} == {"openhands"}
    warnings = [e["message"] for e in events if e["type"] == "warning"]
    assert any(w.startswith("Krok 1 určený pro openhands provedl aider: openhands could not be installed")
               for w in warnings)
    assert any("provedl aider" in w for w in values["warnings"])  # the report lists it
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
