"""Real Claude Code through the real local runner (`LOCAL_AGENTS` mapping `claude` to Claude Code),
installed by the runner's own installer, on both of its routes:

- with `ANTHROPIC_API_KEY` (the agent secret, passed from the service's environment) in a run that
  allows Anthropic it talks to Anthropic's API: here the scripted LLM's `/v1/messages` (`ANTHROPIC_API_BASE`);
- without one it talks to the local model through the service's own `/v1/messages` (a real
  service process with `API_TOKEN` set, so Claude Code must use the key the runner derived), which
  translates onto the local model: the scripted LLM's OpenAI endpoint with native `tool_calls`.

A step runs in the local runner's sandbox where bubblewrap works (as it does here), HOME hidden.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from app.agents.base import AgentJob, AgentResult
from app.agents.local import LocalRunner
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from tests.fixtures.llm_server import Reply, ScriptedLlmServer
from tests.fixtures.service import ServiceProcess, service_env
from tests.support import git, make_git_repo, until

pytestmark = pytest.mark.slow

TOKEN = "orchestrator-api-token-claude-local"
AGENT_TIMEOUT = 300
LOCAL_AGENTS = {"aider": "aider", "openhands": "aider", "claude": "claude", "junie": "aider"}
CLAUDE_TOOLS = {"Bash", "Read", "Edit", "Write"}


@pytest.fixture(scope="module")
def service(mongo_server: Any, llm_server: ScriptedLlmServer, kotlin_server: Any, kb_server: Any, data_root: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """The service whose `/v1/messages` Claude Code reaches on the local route (the embedded model
    being the scripted LLM's OpenAI endpoint)."""
    env = service_env(mongo_url=mongo_server.url, llm_url=llm_server.url, kotlin_url=kotlin_server.url,
                      kb_url=kb_server.url, data_root=data_root, api_token=TOKEN, heartbeat_dead_seconds=60,
                      local_llm_api_base=f"{llm_server.url}/v1", local_llm_model="openai/test-model")
    proc = ServiceProcess(env=env, log_path=tmp_path_factory.mktemp("svc") / "service-claude.log").start()
    yield proc
    proc.stop()


@pytest.fixture
def hold() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def environ(home: Path, **extra: str) -> dict[str, str]:
    """The service's environment as the runner sees it: the test's, without an Anthropic key unless given."""
    home.mkdir(exist_ok=True)
    base = {name: value for name, value in os.environ.items() if name != "ANTHROPIC_API_KEY"}
    return base | {"HOME": str(home)} | extra


def local_route(claude_bin: Path, tmp_path: Path, service: ServiceProcess, llm: ScriptedLlmServer) -> Settings:
    return Settings(data_root=tmp_path, claude_code_dir=str(claude_bin.parents[1]), local_agents=LOCAL_AGENTS,
                    host="127.0.0.1", port=service.port, api_token=TOKEN, anthropic_api_key=None,
                    local_llm_api_base=f"{llm.url}/v1", local_llm_model="openai/test-model", local_agent_command=[])


async def run_claude_step(repo: Path, settings: Settings, env: dict[str, str], instructions: str,
                          lines: list[str], *, cloud: list[str] | None = None) -> AgentResult:
    """One step of a run allowing the `cloud` providers (none: the local route, whatever key is set)."""
    workspaces = WorkspaceManager(settings.data_root)

    async def prepare() -> None:
        workspaces.prepare(repo, StepBrief(agent_type="claude", instructions=instructions, task={"id": "t1"}))

    started = time.monotonic()
    result = await LocalRunner(workspaces, settings, environ=env).run(
        AgentJob(thread_id="thread-t1-claude", task_id="t1", client_id="c1", agent_type="claude", workspace=repo,
                 timeout_seconds=AGENT_TIMEOUT, expect_changes=True, cloud_providers=cloud or []),
        prepare=prepare, on_log=lines.append)
    print(f"[real-agent] claude step through the local runner took {time.monotonic() - started:.1f} s")
    return result


def write_rules(repo: Path) -> tuple[Reply, Reply]:
    """Turn 1: a call of Claude Code's Write tool; turn 2 (carrying its result): the final text."""
    write = {"name": "Write", "input": {"file_path": str(repo / "hello.txt"), "content": "hi\n"}}
    return (Reply("Create hello.txt", "", tool_use=write, times=1, name="write"),
            Reply("File created successfully", "Created hello.txt.", name="final"))


async def test_with_an_anthropic_key_claude_code_talks_to_anthropic(
        claude_bin: Path, llm: ScriptedLlmServer, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo")
    llm.script(*write_rules(repo))
    settings = Settings(data_root=tmp_path, claude_code_dir=str(claude_bin.parents[1]), local_agents=LOCAL_AGENTS,
                        anthropic_api_key="sk-ant-test", anthropic_api_base=llm.url, local_agent_command=[])
    lines: list[str] = []

    result = await run_claude_step(repo, settings, environ(tmp_path / "home", ANTHROPIC_API_KEY="sk-ant-test"),
                                   "Create hello.txt containing hi.", lines, cloud=["anthropic"])

    assert result.success, result.summary + "\n" + result.log_tail
    assert result.program == "claude" and result.fallback is None
    assert (repo / "hello.txt").read_text() == "hi\n" and result.changed_files == ["hello.txt"]
    assert result.summary == "Created hello.txt."
    turns = [r for r in llm.requests if r.matched in ("write", "final")]
    assert [(r.path, r.model, r.matched) for r in turns] == [("/v1/messages", "claude-sonnet-4-5", "write"),
                                                            ("/v1/messages", "claude-sonnet-4-5", "final")]
    assert {tool["name"] for tool in turns[0].body["tools"]} == CLAUDE_TOOLS  # --tools keeps requests small
    # the tokens Claude Code reported go into the run's budget like Aider's
    assert result.tokens is not None and result.tokens["sent"] > 1000 and result.tokens["received"] > 0
    assert result.cost_usd is not None and result.cost_usd > 0


async def test_without_a_key_claude_code_works_on_the_local_model_through_the_service(
        claude_bin: Path, llm: ScriptedLlmServer, service: ServiceProcess, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo")
    llm.script(*write_rules(repo))
    lines: list[str] = []

    result = await run_claude_step(repo, local_route(claude_bin, tmp_path, service, llm), environ(tmp_path / "home"),
                                   "Create hello.txt containing hi.", lines)

    assert result.success, result.summary + "\n" + result.log_tail + "\n" + service.log_tail()
    assert (repo / "hello.txt").read_text() == "hi\n" and result.changed_files == ["hello.txt"]
    assert result.summary == "Created hello.txt."
    turns = [r for r in llm.requests if r.matched in ("write", "final")]
    # translated by the service: OpenAI chat completions to the local model, its tool call native
    assert [(r.path, r.model, r.stream) for r in turns] == [("/v1/chat/completions", "test-model", True)] * 2
    assert {tool["function"]["name"] for tool in turns[0].body["tools"]} == CLAUDE_TOOLS
    tool_result = [m for m in turns[1].messages if m.get("role") == "tool"]
    assert tool_result and "File created successfully" in str(tool_result[0]["content"])
    assert turns[0].body["max_tokens"] == 4096  # CLAUDE_LOCAL_MAX_OUTPUT_TOKENS
    assert result.tokens is not None and result.tokens["sent"] > 1000 and result.tokens["received"] > 0
    assert git(repo, "status", "--porcelain").splitlines() == ["?? hello.txt"]


async def test_an_error_of_the_local_model_fails_the_step(
        claude_bin: Path, llm: ScriptedLlmServer, service: ServiceProcess, tmp_path: Path) -> None:
    """The local server refuses the request (a 400): Claude Code gets Anthropic's invalid_request_error,
    does not retry it, and reports `is_error`; the step fails with the model's message."""
    repo = make_git_repo(tmp_path / "repo")
    llm.script(Reply(None, status=400, error_body=json.dumps(
        {"error": {"message": "the grammar cannot be parsed", "type": "invalid_request_error"}})))

    result = await run_claude_step(repo, local_route(claude_bin, tmp_path, service, llm), environ(tmp_path / "home"),
                                   "Create hello.txt containing hi.", [])

    assert result.success is False and result.changed_files == []
    assert result.summary.startswith("Claude Code reported an error"), result.summary
    assert "the grammar cannot be parsed" in result.summary
    assert len(llm.requests) == 1  # a 400 is not retried


async def test_a_cancel_stops_claude_code_and_the_local_models_generation(
        claude_bin: Path, llm: ScriptedLlmServer, service: ServiceProcess, tmp_path: Path,
        hold: threading.Event) -> None:
    repo = make_git_repo(tmp_path / "repo")
    write, _ = write_rules(repo)
    write.hold = hold  # the local model is "generating" until the test lets go
    llm.script(write)
    lines: list[str] = []
    running = asyncio.create_task(run_claude_step(repo, local_route(claude_bin, tmp_path, service, llm),
                                                  environ(tmp_path / "home"), "Create hello.txt containing hi.",
                                                  lines))
    await until(lambda: any(r.matched == "write" for r in llm.requests), "Claude Code's turn to reach the model",
                timeout=60)
    started = time.monotonic()

    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running

    assert time.monotonic() - started < 15
    [turn] = [r for r in llm.requests if r.matched == "write"]
    # Claude Code is gone, so is its connection to the service, so is the service's to the model
    await until(lambda: turn.streamed_to_end is False, "the model's stream to be closed", timeout=15)
    hold.set()
    await asyncio.sleep(0.5)
    assert not (repo / "hello.txt").exists()


async def test_a_run_not_allowing_anthropic_keeps_claude_code_on_the_local_model_despite_a_key(
        claude_bin: Path, llm: ScriptedLlmServer, service: ServiceProcess, tmp_path: Path) -> None:
    """The service has an Anthropic key, the run's rules do not allow Anthropic (issue 40): Claude
    Code never gets the key and works on the local model through the service, as without one."""
    repo = make_git_repo(tmp_path / "repo")
    llm.script(*write_rules(repo))
    settings = local_route(claude_bin, tmp_path, service, llm).model_copy(update={
        "anthropic_api_key": SecretStr("sk-ant-service-key-not-for-agents"), "anthropic_api_base": llm.url})
    lines: list[str] = []

    result = await run_claude_step(repo, settings, environ(tmp_path / "home",
                                                           ANTHROPIC_API_KEY="sk-ant-service-key-not-for-agents"),
                                   "Create hello.txt containing hi.", lines, cloud=[])

    assert result.success, result.summary + "\n" + result.log_tail + "\n" + service.log_tail()
    assert (repo / "hello.txt").read_text() == "hi\n"
    turns = [r for r in llm.requests if r.matched in ("write", "final")]
    assert [r.path for r in turns] == ["/v1/chat/completions"] * 2  # the service's translation, not Anthropic's API
    assert not [r for r in llm.requests if r.path == "/v1/messages"]
