"""The real Aider and Claude Code, end to end through the entrypoint, against the scripted LLM.

The agents are installed once into `.cache/agents/` by the session fixtures in conftest.py. Each
test runs the entrypoint exactly as an agent image does (`AGENT_TYPE=aider|claude`, no
AGENT_COMMAND), on a real git repository, with HOME in a temporary directory, and talks to the
loopback fakes only: Aider to the OpenAI endpoint, Claude Code to the Anthropic one (and to the
KB MCP server, which calls the fake KB).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.agents.base import AgentJob
from app.agents.local import LocalRunner
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from tests.agent_images.conftest import ENTRYPOINT, KB_MCP_SERVER, base_env
from tests.fixtures.kb_server import FakeKbServer
from tests.fixtures.llm_server import RecordedRequest, Reply, ScriptedLlmServer
from tests.support import git, make_git_repo

pytestmark = pytest.mark.slow

AGENT_TIMEOUT = 300


Run = tuple[subprocess.CompletedProcess[str], dict[str, Any]]


def run_agent_step(repo: Path, home: Path, bin_dir: Path, **env: str) -> Run:
    """One entrypoint run with the agent's bin directory first on PATH; prints its duration."""
    environment = base_env(WORKSPACE_PATH=str(repo), HOME=str(home), TASK_ID="t1", CLIENT_ID="c1", PROJECT_ID="p1",
                           **env)
    environment["PATH"] = f"{bin_dir}:{environment['PATH']}"
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(ENTRYPOINT)], env=environment, cwd=repo, capture_output=True,
                          text=True, timeout=AGENT_TIMEOUT)
    print(f"[real-agent] {env.get('AGENT_TYPE')} step took {time.monotonic() - started:.1f} s", file=sys.stderr)
    result = json.loads((repo / ".jervis" / "result.json").read_text())
    return done, result


def hand_over(repo: Path, instructions: str, **task: Any) -> None:
    jervis = repo / ".jervis"
    jervis.mkdir(exist_ok=True)
    (jervis / "instructions.md").write_text(instructions)
    (jervis / "task.json").write_text(json.dumps({"files": [], "mcp_config": None, "agent_files": [], **task}))


# ----------------------------------------------------------------------- Aider
AIDER_ANSWER = """I will make greet() say hello world.

greet.py
```
def greet():
    return "hello world"
```
"""


def test_aider_edits_a_file_and_commits_nothing(aider_bin: Path, llm: ScriptedLlmServer, tmp_path: Path) -> None:
    """Aider's "whole" edit format: the reply is the file name, then the whole new file in a fence
    (aider/coders/wholefile_prompts.py)."""
    repo = make_git_repo(tmp_path / "repo")
    (repo / "greet.py").write_text('def greet():\n    return "hi"\n')
    (repo / "test_greet.py").write_text("from greet import greet\nassert greet() == 'hello world'\n")
    git(repo, "add", "greet.py", "test_greet.py")
    git(repo, "commit", "-qm", "greet")
    before = git(repo, "rev-parse", "HEAD").strip()
    hand_over(repo, "Make greet() return 'hello world'.", files=["greet.py"], read_files=["test_greet.py"])
    llm.script(Reply("Make greet() return", AIDER_ANSWER, name="edit"))
    home = tmp_path / "home"
    home.mkdir()

    done, result = run_agent_step(
        repo, home, aider_bin, AGENT_TYPE="aider", AGENT_MODEL="openai/test-model",
        OPENAI_API_BASE=llm.url + "/v1", OPENAI_API_KEY="x", AGENT_EXTRA_ARGS=json.dumps(["--edit-format", "whole"]))

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (repo / "greet.py").read_text() == 'def greet():\n    return "hello world"\n'
    assert result["success"] is True and result["changedFiles"] == ["greet.py"]
    assert result["exitCode"] == 0 and "Applied edit to greet.py" in result["logTail"]
    assert git(repo, "rev-parse", "HEAD").strip() == before  # --no-auto-commits
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert not (repo / ".gitignore").exists()  # --no-gitignore
    (request,) = [r for r in llm.requests if r.matched == "edit"]
    # streamed: a stopped agent closes the connection, so a real model server stops generating
    assert request.path == "/v1/chat/completions" and request.model == "test-model" and request.stream is True
    assert 'return "hi"' in request.text  # aider sent the file it was given
    assert "assert greet() == 'hello world'" in request.text  # and the test covering it, read-only
    assert "raw.githubusercontent.com" not in done.stdout + done.stderr  # no price-list download at start


def test_aider_llm_error_with_exit_0_is_a_failure(aider_bin: Path, llm: ScriptedLlmServer, tmp_path: Path) -> None:
    """Aider exits 0 after an authentication/bad-request error; the entrypoint reads its output."""
    repo = make_git_repo(tmp_path / "repo")
    hand_over(repo, "Change the README.", files=["README.md"])
    error = {"error": {"message": "invalid api key", "type": "invalid_request_error"}}
    llm.script(Reply(None, status=400, error_body=json.dumps(error)))
    home = tmp_path / "home"
    home.mkdir()

    done, result = run_agent_step(repo, home, aider_bin, AGENT_TYPE="aider", AGENT_MODEL="openai/test-model",
                                  OPENAI_API_BASE=llm.url + "/v1", OPENAI_API_KEY="x")

    assert done.returncode == 1 and result["exitCode"] == 0
    assert result["success"] is False and result["summary"].startswith("Aider reported an error: litellm.")
    assert "invalid api key" in result["summary"] and result["changedFiles"] == []


# ----------------------------------------------------------------- Claude Code
def claude_env(llm: ScriptedLlmServer) -> dict[str, str]:
    return {"AGENT_TYPE": "claude", "AGENT_MODEL": "test-model", "ANTHROPIC_BASE_URL": llm.url,
            "ANTHROPIC_API_KEY": "x", "IS_SANDBOX": "1", "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


def test_claude_writes_a_file_with_its_write_tool(claude_bin: Path, llm: ScriptedLlmServer, tmp_path: Path) -> None:
    """First turn: a tool_use of Claude Code's `Write` tool ({file_path (absolute), content});
    second turn carries the tool_result and gets the final text, which becomes the summary."""
    repo = make_git_repo(tmp_path / "repo")
    hand_over(repo, "Create hello.txt containing hi.")
    write = {"name": "Write", "input": {"file_path": str(repo / "hello.txt"), "content": "hi\n"}}
    llm.script(
        Reply("Create hello.txt", "", tool_use=write, times=1, name="write"),
        Reply("File created successfully", "Created hello.txt.", name="final"),
    )
    home = tmp_path / "home"
    home.mkdir()

    done, result = run_agent_step(repo, home, claude_bin, **claude_env(llm))

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (repo / "hello.txt").read_text() == "hi\n"
    assert result["success"] is True and result["changedFiles"] == ["hello.txt"]
    assert result["summary"] == "Created hello.txt." and result["exitCode"] == 0
    reported = json.loads(next(line for line in done.stdout.splitlines() if line.startswith('{"type":"result"')))
    assert result["costUsd"] == reported["total_cost_usd"] and result["costUsd"] > 0
    turns = [r for r in llm.requests if r.matched in ("write", "final")]
    assert [r.matched for r in turns] == ["write", "final"] and all(r.stream for r in turns)
    tools = {tool["name"]: tool for tool in turns[0].body["tools"]}
    assert set(tools["Write"]["input_schema"]["required"]) == {"file_path", "content"}


def test_claude_api_error_is_a_failure(claude_bin: Path, llm: ScriptedLlmServer, tmp_path: Path) -> None:
    """An API error ends with `subtype: success` but `is_error: true` in Claude Code's JSON: a failed
    step. (Claude Code retries a 401 with backoff for ~3 minutes unless CLAUDE_CODE_MAX_RETRIES=0.)"""
    repo = make_git_repo(tmp_path / "repo")
    hand_over(repo, "Create hello.txt containing hi.")
    llm.script(Reply(None, status=401, error_body=json.dumps(
        {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})))
    home = tmp_path / "home"
    home.mkdir()

    done, result = run_agent_step(repo, home, claude_bin, **claude_env(llm), CLAUDE_CODE_MAX_RETRIES="0")

    assert done.returncode == 1 and result["success"] is False
    reported = json.loads(next(line for line in done.stdout.splitlines() if line.startswith('{"type":"result"')))
    assert (reported["subtype"], reported["is_error"], reported["api_error_status"]) == ("success", True, 401)
    assert result["summary"].startswith("Claude Code reported an error: Invalid API key")
    assert result["changedFiles"] == [] and result["costUsd"] == 0


def test_claude_uses_the_kb_mcp_server(claude_bin: Path, mcp_python: Path, llm: ScriptedLlmServer,
                                       kb: FakeKbServer, tmp_path: Path) -> None:
    """`.claude/mcp.json` as the orchestrator writes it starts kb_server.py; Claude Code calls
    `mcp__jervis-kb__kb_search`, the fake KB gets the camelCase request, the hit reaches the model."""
    kb.add_chunk("TokenService refreshes the JWT token lazily", "git::p1::Token.kt", client_id="c1", project_id="p1")
    repo = make_git_repo(tmp_path / "repo")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "mcp.json").write_text(json.dumps({"mcpServers": {"jervis-kb": {
        "command": str(mcp_python), "args": [str(KB_MCP_SERVER)],
        "env": {"CLIENT_ID": "c1", "PROJECT_ID": "p1", "KB_URL": kb.url, "KB_WRITE_URL": kb.url}}}}))
    hand_over(repo, "Look up how the token is refreshed.", mcp_config=".claude/mcp.json",
              agent_files=[".claude/mcp.json"])

    def answer(request: RecordedRequest) -> str:
        return "KB: " + ("lazily" if "refreshes the JWT token lazily" in request.text else "nothing")

    # The scripted model answers at once, often before Claude Code has connected the MCP server
    # ("still connecting" comes back as the tool's result): it asks again until the search lands.
    llm.script(
        Reply("git::p1::Token.kt", answer, name="final"),
        Reply("Look up how the token", "", name="search",
              tool_use={"name": "mcp__jervis-kb__kb_search", "input": {"query": "token refresh"}}),
    )
    home = tmp_path / "home"
    home.mkdir()

    done, result = run_agent_step(repo, home, claude_bin, **claude_env(llm))

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert result["success"] is True and result["summary"] == "KB: lazily"
    assert result["changedFiles"] == []  # .claude/mcp.json is an agent file
    search = [r for r in llm.requests if r.matched == "search"][-1]  # the one that reached the KB
    assert {"mcp__jervis-kb__kb_search", "mcp__jervis-kb__kb_store"} <= {t["name"] for t in search.body["tools"]}
    assert [(r.path, r.data["query"], r.data["clientId"]) for r in kb.requests] == [
        ("/api/v1/retrieve", "token refresh", "c1")]


async def test_the_local_runner_runs_the_real_aider_for_any_agent_type_by_default(
        aider_bin: Path, llm: ScriptedLlmServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The product default (no LOCAL_AGENT_COMMAND): a step planned for `claude` runs the local Aider
    from AIDER_VENV against the local OpenAI-compatible server, with the small-model flags; the
    repository's .gitignore, index and HEAD stay untouched and no `.aider*` file is left to commit."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    repo = make_git_repo(tmp_path / "repo")
    (repo / "greet.py").write_text('def greet():\n    return "hi"\n')
    (repo / ".gitignore").write_text("*.pyc\n")
    git(repo, "add", "greet.py", ".gitignore")
    git(repo, "commit", "-qm", "greet")
    before = git(repo, "rev-parse", "HEAD").strip()
    llm.script(Reply("Make greet() return", AIDER_ANSWER, name="edit"))
    settings = Settings(data_root=tmp_path, aider_venv=str(aider_bin.parent), local_llm_api_base=llm.url + "/v1",
                        local_llm_model="openai/test-model")
    workspaces = WorkspaceManager(tmp_path)
    lines: list[str] = []

    async def prepare() -> None:
        workspaces.prepare(repo, StepBrief(agent_type="claude", instructions="Make greet() return 'hello world'.",
                                           task={"id": "t1"}, files=["greet.py"]))

    result = await LocalRunner(workspaces, settings).run(
        AgentJob(thread_id="thread-t1-abcd", task_id="t1", client_id="c1", agent_type="claude", workspace=repo,
                 timeout_seconds=AGENT_TIMEOUT, expect_changes=True), prepare=prepare, on_log=lines.append)

    assert result.success, result.summary + "\n" + result.log_tail
    assert result.changed_files == ["greet.py"]
    assert (repo / "greet.py").read_text() == 'def greet():\n    return "hello world"\n'
    assert (repo / ".gitignore").read_text() == "*.pyc\n"
    assert git(repo, "rev-parse", "HEAD").strip() == before and git(repo, "diff", "--cached", "--name-only") == ""
    assert git(repo, "status", "--porcelain").splitlines() == [" M greet.py"]  # no .aider* to commit
    (request,) = [r for r in llm.requests if r.matched == "edit"]
    assert request.model == "test-model" and "file listing" in request.text  # the whole-file edit format
    output = "\n".join(lines)  # Aider's own start-up lines confirm the flags it was given
    assert "Model: openai/test-model with whole edit format" in output and "Repo-map: disabled" in output
