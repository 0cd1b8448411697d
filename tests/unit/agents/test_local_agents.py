"""Which program runs each agent type on the local runner, and Aider's install on first use.

The real Aider run through the local runner is in tests/agent_images/test_real_agents.py; here
the resolution, the environment it hands the entrypoint, and the install failures (no network:
pip is told to use no index, so it fails at once without leaving loopback).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.agents.aider_install import AIDER_SPEC, AiderInstallError, ensure_aider, is_installed
from app.agents.base import AgentJob
from app.agents.factory import describe_agents
from app.agents.local import LocalRunner
from app.agents.local_agents import LocalAgents
from app.agents.workspace import WorkspaceManager
from app.config import Settings
from app.runtime.installs import MARKER
from tests.support import SCRIPTED_AGENT, make_git_repo

TYPES = ("aider", "openhands", "claude", "junie")


def fake_installed_venv(venv: Path) -> Path:
    """A virtualenv directory that looks installed: the marker names the pin, bin/aider exists."""
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "aider").write_text("#!/bin/sh\n")
    (venv / MARKER).write_text(AIDER_SPEC + "\n")
    return venv


def test_every_type_runs_the_local_aider_on_the_ollama_model_by_default(tmp_path: Path) -> None:
    agents = LocalAgents(Settings(local_model="qwen-small", aider_venv=str(tmp_path / "venv")))
    described = agents.describe()
    assert set(described) == set(TYPES)
    for agent_type in TYPES:
        assert agents.program(agent_type) == "aider"
        assert described[agent_type] == (f"aider ({AIDER_SPEC}, model ollama_chat/qwen-small; "
                                          f"installed on first use in {tmp_path / 'venv'})")


def test_the_embedded_server_is_the_model_when_configured(tmp_path: Path) -> None:
    venv = fake_installed_venv(tmp_path / "venv")
    settings = Settings(aider_venv=str(venv), local_llm_api_base="http://127.0.0.1:9/v1",
                        local_llm_model="openai/qwen-embedded")
    assert LocalAgents(settings).describe()["claude"].endswith(f"model openai/qwen-embedded; installed in {venv})")


async def test_the_environment_points_the_entrypoint_at_aider_with_the_small_model_flags(tmp_path: Path) -> None:
    venv = fake_installed_venv(tmp_path / "venv")
    settings = Settings(aider_venv=str(venv), local_llm_api_base="http://127.0.0.1:9/v1",
                        local_llm_model="openai/qwen-embedded")
    env = await LocalAgents(settings).env("openhands", log=pytest.fail)  # installed: nothing to report
    assert env["AGENT_TYPE"] == "aider" and env["AGENT_MODEL"] == "openai/qwen-embedded"
    assert json.loads(env["AGENT_EXTRA_ARGS"]) == ["--edit-format", "whole", "--map-tokens", "0"]
    assert env["PATH"].split(os.pathsep)[0] == str(venv / "bin")
    assert env["OPENAI_API_BASE"] == "http://127.0.0.1:9/v1" and "AGENT_COMMAND" not in env


async def test_other_agents_come_from_path_and_the_test_command_replaces_them_all(tmp_path: Path) -> None:
    settings = Settings(aider_venv=str(tmp_path / "venv"), local_agents={"claude": "aider", "aider": "aider",
                                                                         "openhands": "aider", "junie": "junie"},
                        agent_models={"junie": "junie-model"})
    agents = LocalAgents(settings)
    assert agents.program("junie") == "junie"
    assert agents.describe()["junie"] == "junie (from PATH, model junie-model)"
    assert await agents.env("junie", log=pytest.fail) == {"AGENT_TYPE": "junie", "AGENT_MODEL": "junie-model"}

    command = LocalAgents(Settings(local_agent_command=SCRIPTED_AGENT))
    assert {command.program(t) for t in TYPES} == {"command"}
    env = await command.env("aider", log=pytest.fail)
    assert json.loads(env["AGENT_COMMAND"]) == SCRIPTED_AGENT and env["AGENT_TYPE"] == "aider"


def test_health_and_the_start_up_log_name_the_job_image_on_kubernetes() -> None:
    described = describe_agents(Settings(agent_runner="kubernetes", container_registry="registry.example/jervis"))
    assert described["claude"] == "Job of registry.example/jervis/jervis-claude:latest"


def test_an_installed_venv_is_reused_and_a_changed_pin_is_not(tmp_path: Path) -> None:
    venv = fake_installed_venv(tmp_path / "venv")
    assert ensure_aider(venv, log=pytest.fail) == venv / "bin"
    assert not is_installed(venv, "aider-chat==0.0.1")


def test_an_install_that_cannot_run_is_an_error_naming_the_step(tmp_path: Path) -> None:
    lines: list[str] = []
    with pytest.raises(AiderInstallError, match="creating the virtualenv"):
        ensure_aider(tmp_path / "venv", python="/bin/false", log=lines.append)
    assert lines == [f"aider: installing {AIDER_SPEC} into {tmp_path / 'venv'} (once; about 700 MB, 1-3 minutes) …"]
    assert not is_installed(tmp_path / "venv")


async def test_a_failed_install_fails_the_step_before_the_agent_starts(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """pip without an index fails at once (no traffic leaves the machine); the progress lines of
    the install thread reach the run's log sink, and the workspace is never prepared."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    repo = make_git_repo(tmp_path / "repo")
    runner = LocalRunner(WorkspaceManager(tmp_path), Settings(aider_venv=str(tmp_path / "cache" / "venv")))
    lines: list[str] = []
    prepared: list[bool] = []

    async def prepare() -> None:
        prepared.append(True)

    result = await runner.run(AgentJob(thread_id="thread-t1-abcd", task_id="t1", client_id="c1", agent_type="claude",
                                       workspace=repo), prepare=prepare, on_log=lines.append)

    assert not result.success and result.summary.startswith("aider could not be installed: pip install aider-chat")
    assert "No matching distribution" in result.log_tail or "no matching distribution" in result.log_tail.lower()
    assert prepared == [] and lines[0].startswith(f"aider: installing {AIDER_SPEC}")
    assert not is_installed(tmp_path / "cache" / "venv")


async def test_git_and_test_modes_need_no_agent(tmp_path: Path) -> None:
    """A commit or a test run never installs Aider: the entrypoint runs git or the tests itself."""
    settings = Settings(aider_venv=str(tmp_path / "missing" / "venv"))
    agents = LocalAgents(settings)
    repo = make_git_repo(tmp_path / "repo")
    runner = LocalRunner(WorkspaceManager(tmp_path), settings, agents=agents)
    (repo / ".jervis").mkdir()
    (repo / ".jervis" / "test.json").write_text(json.dumps({"command": ["true"], "timeout_seconds": 30}))

    async def prepare() -> None:
        return None

    result = await runner.run(AgentJob(thread_id="thread-t1-abcd", task_id="t1", client_id="c1",
                                       agent_type="aider", workspace=repo, mode="test"), prepare=prepare)
    assert result.test_outcome == "passed" and not (tmp_path / "missing").exists()
