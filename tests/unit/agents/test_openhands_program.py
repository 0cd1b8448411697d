"""The local OpenHands program: its install state, the entrypoint variables for the embedded model
and for Ollama, and the Python 3.12 it needs (found on PATH or in pyenv, or a clear error).

The real SDK run through the entrypoint and the local runner is in tests/agent_images/test_openhands.py.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from app.agents import aider_install
from app.agents.local_agents import LocalAgents
from app.agents.programs import AgentInstallError
from app.agents.programs.aider import AiderProgram
from app.agents.programs.openhands import OPENHANDS_SPEC, OpenHandsProgram
from app.config import Settings
from app.runtime.installs import MARKER

EMBEDDED = {"local_llm_api_base": "http://127.0.0.1:9/v1", "local_llm_model": "openai/qwen-embedded"}


def fake_openhands_venv(venv: Path, spec: str = OPENHANDS_SPEC) -> Path:
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\n")
    (venv / MARKER).write_text(spec + "\n")
    return venv


def fake_aider_venv(venv: Path) -> Path:
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "aider").write_text("#!/bin/sh\n")
    (venv / MARKER).write_text(aider_install.AIDER_SPEC + "\n")
    return venv


def fake_python(path: Path, output: str, code: int = 0) -> Path:
    """An executable that ignores its arguments, prints `output` and exits `code`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{output}'\nexit {code}\n")
    path.chmod(0o755)
    return path


def test_installed_only_with_the_pinned_marker(tmp_path: Path) -> None:
    program = OpenHandsProgram(Settings(openhands_venv=str(tmp_path / "venv"), **EMBEDDED))
    assert not program.installed()
    assert program.describe() == (f"openhands ({OPENHANDS_SPEC}, model openai/qwen-embedded, tool calls as text; "
                                  f"installed on first use in {tmp_path / 'venv'})")
    fake_openhands_venv(tmp_path / "venv")
    assert program.installed() and program.describe().endswith(f"; installed in {tmp_path / 'venv'})")
    (tmp_path / "venv" / MARKER).write_text("openhands-sdk==1.0.0\n")  # another pin: installed again
    assert not program.installed()


def test_the_embedded_model_gets_tool_calls_as_text(tmp_path: Path) -> None:
    """llama-cpp-python's server answers a tool call the model chooses as text, not `tool_calls`."""
    venv = tmp_path / "venv"
    env = OpenHandsProgram(Settings(openhands_venv=str(venv), **EMBEDDED)).env()
    assert env == {"AGENT_TYPE": "openhands", "AGENT_MODEL": "openai/qwen-embedded",
                   "OPENHANDS_PYTHON": str(venv / "bin" / "python"), "LLM_MODEL": "openai/qwen-embedded",
                   "LLM_BASE_URL": "http://127.0.0.1:9/v1", "LLM_API_KEY": "local", "LLM_NATIVE_TOOL_CALLING": "false",
                   "LLM_FORCE_STRING_SERIALIZER": "true"}  # the server refuses contents as lists of parts


def test_ollama_gets_native_tool_calls_on_its_chat_api(tmp_path: Path) -> None:
    program = OpenHandsProgram(Settings(openhands_venv=str(tmp_path / "venv"), local_model="qwen3-coder:30b",
                                        ollama_url="http://127.0.0.1:11434"))
    env = program.env()
    assert (env["LLM_MODEL"], env["AGENT_MODEL"]) == ("ollama_chat/qwen3-coder:30b", "ollama_chat/qwen3-coder:30b")
    assert env["LLM_BASE_URL"] == "http://127.0.0.1:11434" and env["LLM_NATIVE_TOOL_CALLING"] == "true"
    assert "LLM_FORCE_STRING_SERIALIZER" not in env
    assert "native tool calls" in program.describe()


async def test_the_local_agents_run_openhands_when_mapped_to_it(tmp_path: Path) -> None:
    venv = fake_openhands_venv(tmp_path / "venv")
    settings = Settings(openhands_venv=str(venv), local_agents={"openhands": "openhands", "aider": "aider",
                                                                "claude": "aider", "junie": "aider"}, **EMBEDDED)
    agents = LocalAgents(settings)
    assert agents.program("openhands") == "openhands" and agents.describe()["openhands"].startswith("openhands (")
    resolved = await agents.resolve("openhands", log=pytest.fail)  # installed: nothing to report
    assert resolved.program == "openhands" and resolved.fallback is None
    assert resolved.env["AGENT_TYPE"] == "openhands"
    assert resolved.env["OPENHANDS_PYTHON"] == str(venv / "bin" / "python")


def test_without_python_3_12_the_install_says_what_to_install(tmp_path: Path) -> None:
    """Nothing on PATH, no pyenv: an error naming the version and how to get it; nothing is created."""
    (tmp_path / "bin").mkdir()
    program = OpenHandsProgram(Settings(openhands_venv=str(tmp_path / "cache" / "venv")),
                               environ={"PATH": str(tmp_path / "bin"), "HOME": str(tmp_path)})
    lines: list[str] = []
    with pytest.raises(AgentInstallError) as raised:
        program.install(lines.append)
    message = str(raised.value)
    assert message.startswith("OpenHands needs Python 3.12 or later and none was found (tried PATH and pyenv: nothing)")
    assert "apt-get install python3.12 python3.12-venv" in message and "OPENHANDS_PYTHON" in message
    assert lines == [] and not (tmp_path / "cache" / "venv").exists() and not program.installed()


def test_pythons_that_do_not_run_or_are_too_old_are_passed_over(tmp_path: Path) -> None:
    """A pyenv shim of an unselected version exits 127; a `python3.12` that is really 3.11 is not taken;
    pyenv's 3.12 is (before its 3.13, newest patch first); too old a pyenv version is never tried."""
    bin_dir = tmp_path / "bin"
    fake_python(bin_dir / "python3.12", "pyenv: python3.12: command not found", code=127)
    (bin_dir / "python3.13").symlink_to(sys.executable)  # the tests' own Python: 3.11
    versions = tmp_path / ".pyenv" / "versions"
    fake_python(versions / "3.11.7" / "bin" / "python3.11", "3.11")
    fake_python(versions / "3.13.0" / "bin" / "python3.13", "3.13")
    fake_python(versions / "3.12.1" / "bin" / "python3.12", "3.12")
    fake_python(versions / "3.12.9" / "bin" / "python3.12", "3.12")
    program = OpenHandsProgram(Settings(openhands_venv=str(tmp_path / "venv")),
                               environ={"PATH": str(bin_dir), "HOME": str(tmp_path)})
    assert program.find_python() == versions / "3.12.9" / "bin" / "python3.12"
    assert [str(path) for path in program._candidates()] == [
        str(bin_dir / "python3.12"), str(bin_dir / "python3.13"), str(versions / "3.12.9" / "bin" / "python3.12"),
        str(versions / "3.12.1" / "bin" / "python3.12"), str(versions / "3.13.0" / "bin" / "python3.13")]


def test_a_configured_python_is_used_or_refused_by_name(tmp_path: Path) -> None:
    good = fake_python(tmp_path / "py" / "python", "3.13")
    assert OpenHandsProgram(Settings(openhands_python=str(good)), environ={}).find_python() == good
    with pytest.raises(AgentInstallError, match=rf"OPENHANDS_PYTHON={sys.executable} is not a Python of 3\.12"):
        OpenHandsProgram(Settings(openhands_python=sys.executable), environ={}).find_python()


async def test_a_missing_python_hands_the_step_to_aider_and_says_why(tmp_path: Path) -> None:
    """The local runner's fallback: the step runs the local Aider, and the reason is the install error."""
    aider_venv = fake_aider_venv(tmp_path / "aider")
    settings = Settings(aider_venv=str(aider_venv), openhands_venv=str(tmp_path / "openhands"),
                        local_agents={"openhands": "openhands", "aider": "aider", "claude": "aider", "junie": "aider"})
    (tmp_path / "bin").mkdir()
    openhands = OpenHandsProgram(settings, environ={"PATH": str(tmp_path / "bin"), "HOME": str(tmp_path)})
    agents = LocalAgents(settings, programs={"aider": AiderProgram(settings), "openhands": openhands})
    lines: list[str] = []
    resolved = await agents.resolve("openhands", log=lines.append)
    assert resolved.program == "aider" and resolved.env["AGENT_TYPE"] == "aider"
    assert resolved.fallback is not None and resolved.fallback.startswith(
        "openhands could not be installed: OpenHands needs Python 3.12 or later")
    assert lines == [f"{resolved.fallback}; aider runs this step instead"]
    assert os.path.isdir(aider_venv) and not (tmp_path / "openhands").exists()
