"""The local Claude Code program: which route it takes (Anthropic with a key, else the local model
through the service's own `/v1/messages`), what it says of itself, its install state, and a clear
error where Node.js or npm is missing or too old.

Real Claude Code through the entrypoint and the local runner is in tests/agent_images/test_claude_local.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from app.agents.local_agents import LocalAgents
from app.agents.programs import AgentInstallError
from app.agents.programs.claude import CLAUDE_CODE_SPEC, CLAUDE_CODE_VERSION, NO_TRAFFIC, ClaudeCodeProgram
from app.config import Settings
from app.llm.anthropic_messages import agent_key
from app.runtime.installs import MARKER

EMBEDDED = {"local_llm_api_base": "http://127.0.0.1:9/v1", "local_llm_model": "openai/qwen-embedded"}
TOKEN = "service-api-token-0123456789"
REPO_ROOT = Path(__file__).resolve().parents[3]


def settings(tmp_path: Path, **overrides: Any) -> Settings:
    base: dict[str, Any] = {"claude_code_dir": str(tmp_path / "claude-code"), "anthropic_api_key": None,
                            "api_token": None, "anthropic_api_base": None}
    return Settings(**(base | overrides))


def fake_install(prefix: Path, spec: str = CLAUDE_CODE_SPEC) -> None:
    (prefix / "node_modules" / ".bin").mkdir(parents=True)
    (prefix / "node_modules" / ".bin" / "claude").write_text("#!/bin/sh\n")
    (prefix / MARKER).write_text(spec + "\n")


def executable(path: Path, script: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return path


def test_with_an_anthropic_key_it_talks_to_anthropic_with_the_claude_model(tmp_path: Path) -> None:
    program = ClaudeCodeProgram(settings(tmp_path, anthropic_api_key="sk-ant-secret", **EMBEDDED),
                                environ={"PATH": "/usr/bin"})
    env = program.env()
    assert env["AGENT_TYPE"] == "claude" and env["AGENT_MODEL"] == "claude-sonnet-4-5"
    assert env["PATH"] == f"{tmp_path / 'claude-code' / 'node_modules' / '.bin'}:/usr/bin"
    assert NO_TRAFFIC.items() <= env.items()
    # the key reaches the agent as the agent secret it is (AGENT_SECRET_KEYS), never from here
    assert "ANTHROPIC_API_KEY" not in env and "ANTHROPIC_BASE_URL" not in env
    assert "sk-ant-secret" not in str(env)
    assert program.describe() == (f"claude ({CLAUDE_CODE_SPEC}, on the Anthropic API with claude-sonnet-4-5; "
                                  f"installed on first use in {tmp_path / 'claude-code'})")


def test_an_anthropic_api_base_is_where_it_goes(tmp_path: Path) -> None:
    program = ClaudeCodeProgram(settings(tmp_path, anthropic_api_key="k", anthropic_api_base="http://127.0.0.1:7",
                                         agent_models={"claude": "claude-opus-4-6"}))
    assert program.env()["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:7"
    assert program.env()["AGENT_MODEL"] == "claude-opus-4-6"
    assert "on http://127.0.0.1:7 with claude-opus-4-6" in program.describe()


def test_without_a_key_it_talks_to_the_local_model_through_the_service(tmp_path: Path) -> None:
    """The service's loopback URL (0.0.0.0 is every interface: the agent connects to 127.0.0.1)
    and a key derived from API_TOKEN, never the token itself."""
    program = ClaudeCodeProgram(settings(tmp_path, api_token=TOKEN, port=8123, **EMBEDDED))
    env = program.env()
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8123"
    assert env["ANTHROPIC_API_KEY"] == agent_key(TOKEN) and TOKEN not in str(env)
    assert env["AGENT_MODEL"] == env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == "openai/qwen-embedded"
    assert env["API_TIMEOUT_MS"] == "1800000"  # a request may wait for a busy local model as long as the step
    assert NO_TRAFFIC.items() <= env.items()
    assert "on the local model openai/qwen-embedded through the service's /v1/messages" in program.describe()


@pytest.mark.parametrize(("host", "url"), [("0.0.0.0", "http://127.0.0.1:8090"), ("::", "http://127.0.0.1:8090"),
                                           ("127.0.0.2", "http://127.0.0.2:8090"), ("::1", "http://[::1]:8090"),
                                           ("localhost", "http://localhost:8090")])
def test_the_service_url_is_its_listen_address_or_loopback(tmp_path: Path, host: str, url: str) -> None:
    assert ClaudeCodeProgram(settings(tmp_path, host=host)).env()["ANTHROPIC_BASE_URL"] == url


def test_without_an_api_token_any_key_is_taken_and_ollama_is_the_local_model(tmp_path: Path) -> None:
    program = ClaudeCodeProgram(settings(tmp_path, local_model="qwen3-coder:30b"))
    env = program.env()
    assert env["ANTHROPIC_API_KEY"] == "local" and env["AGENT_MODEL"] == "ollama_chat/qwen3-coder:30b"


def test_installed_only_with_the_pinned_marker(tmp_path: Path) -> None:
    program = ClaudeCodeProgram(settings(tmp_path))
    assert not program.installed()
    fake_install(tmp_path / "claude-code")
    assert program.installed() and program.describe().endswith(f"; installed in {tmp_path / 'claude-code'})")
    (tmp_path / "claude-code" / MARKER).write_text("@anthropic-ai/claude-code@1.0.0\n")  # another pin
    assert not program.installed()


def test_missing_node_or_npm_is_a_clear_install_error(tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    program = ClaudeCodeProgram(settings(tmp_path), environ={"PATH": str(bare)})
    with pytest.raises(AgentInstallError, match=r"node and npm not found on PATH; install Node\.js 18 or later"):
        program.install(lambda line: None)
    executable(bare / "node", "echo v20.1.0")
    with pytest.raises(AgentInstallError, match="npm not found on PATH"):
        program.install(lambda line: None)
    assert not (tmp_path / "claude-code").exists()  # nothing half-installed


def test_a_node_too_old_is_a_clear_install_error(tmp_path: Path) -> None:
    bins = tmp_path / "bin"
    executable(bins / "node", "echo v16.20.2")
    executable(bins / "npm", "echo npm must not run; exit 1")
    program = ClaudeCodeProgram(settings(tmp_path), environ={"PATH": str(bins)})
    with pytest.raises(AgentInstallError, match=r"needs Node\.js 18\.0 or later, .*node is v16\.20\.2"):
        program.install(lambda line: None)


def test_a_failed_npm_install_is_an_install_error_with_its_output(tmp_path: Path) -> None:
    bins = tmp_path / "bin"
    executable(bins / "node", "echo v20.1.0")
    executable(bins / "npm", "echo 'npm error code E404'; exit 1")
    program = ClaudeCodeProgram(settings(tmp_path), environ={"PATH": str(bins)})
    lines: list[str] = []
    with pytest.raises(AgentInstallError, match=r"(?s)npm install @anthropic-ai/claude-code@.* failed.*E404"):
        program.install(lines.append)
    assert lines == [f"claude: installing {CLAUDE_CODE_SPEC} into {tmp_path / 'claude-code'} "
                     "(once; about 235 MB, seconds to minutes) …"]
    assert not program.installed()


def test_the_local_runner_knows_it_and_runs_it_where_local_agents_says(tmp_path: Path) -> None:
    agents = LocalAgents(settings(tmp_path, local_agents={"aider": "aider", "openhands": "aider",
                                                          "claude": "claude", "junie": "aider"}, **EMBEDDED))
    assert isinstance(agents.programs["claude"], ClaudeCodeProgram)
    assert agents.program("claude") == "claude"
    assert agents.describe()["claude"].startswith(f"claude ({CLAUDE_CODE_SPEC}, on the local model")


def test_the_agent_image_installs_the_same_version() -> None:
    dockerfile = (REPO_ROOT / "agent-images" / "claude" / "Dockerfile").read_text()
    assert re.findall(r"^ARG CLAUDE_CODE_VERSION=(\S+)$", dockerfile, re.MULTILINE) == [CLAUDE_CODE_VERSION]
    assert '"@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}"' in dockerfile
