"""The real OpenHands (its SDK, run by `openhands_agent.py`) through the real entrypoint and through
the real local runner, against the scripted LLM server.

The SDK is installed once into `.cache/agents/openhands-venv` by the service's own installer
(`OpenHandsProgram`, with a Python 3.12 found on the machine); `scripts/test.sh` starts that install
beside the lint, and the fixture waits for its lock (and redoes it when it failed). Tool calls come
both ways OpenHands reads them: native `tool_calls` (the OpenAI endpoint answers a `tool_use` rule
with them) and the text format it asks for when `LLM_NATIVE_TOOL_CALLING=false` (what the embedded
model is given), built by `text_call`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from app.agents.base import AgentJob, AgentResult
from app.agents.local import LocalRunner
from app.agents.programs import AgentInstallError
from app.agents.programs.openhands import OpenHandsProgram
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from tests.agent_images.conftest import CACHE, ENTRYPOINT, base_env
from tests.fixtures.llm_server import RecordedRequest, Reply, ScriptedLlmServer
from tests.support import git, make_git_repo

pytestmark = pytest.mark.slow

AGENT_TIMEOUT = 300
RUNNER = ENTRYPOINT.with_name("openhands_agent.py")


def created(path: Path) -> str:
    """What OpenHands' file editor answers after a `create` of `path`: the turn carrying it gets the
    final text. (The text format's example in the prompt shows the same answer for another path.)"""
    return f"File created successfully at: {path}"

Run = tuple[subprocess.CompletedProcess[str], dict[str, Any]]


@pytest.fixture(scope="module")
def openhands_python() -> Path:
    """The OpenHands virtualenv's Python, installed by the service's installer on first use (it waits
    for an install scripts/test.sh started, under the same file lock)."""
    program = OpenHandsProgram(Settings(openhands_venv=str(CACHE / "openhands-venv")))
    started = time.monotonic()
    try:
        program.install(lambda line: print(f"[agent-install] {line}", file=sys.stderr, flush=True))
    except AgentInstallError as exc:
        pytest.fail(f"installing OpenHands failed: {exc}")
    print(f"[agent-install] OpenHands ready after {time.monotonic() - started:.1f} s", file=sys.stderr)
    assert program.installed()
    return program.python


def text_call(tool: str, **parameters: str) -> str:
    """A tool call in OpenHands' text format (openhands/sdk/llm/mixins/fn_call_converter.py): what a
    model writes when tools are described in the prompt instead of passed as `tools`. Values are
    stripped when read, so a file's last newline is lost."""
    lines = [f"<function={tool}>"]
    for name, value in parameters.items():
        lines.append(f"<parameter={name}>\n{value}\n</parameter>" if "\n" in value else
                     f"<parameter={name}>{value}</parameter>")
    return "\n".join([*lines, "</function>"])


def hand_over(repo: Path, instructions: str) -> None:
    jervis = repo / ".jervis"
    jervis.mkdir(exist_ok=True)
    (jervis / "instructions.md").write_text(instructions)
    (jervis / "task.json").write_text(json.dumps({"files": [], "mcp_config": None, "agent_files": []}))


def run_step(repo: Path, home: Path, python: Path, llm: ScriptedLlmServer, **env: str) -> Run:
    """One entrypoint run exactly as the OpenHands image does it (AGENT_TYPE=openhands)."""
    environment = base_env(WORKSPACE_PATH=str(repo), HOME=str(home), TASK_ID="t1", CLIENT_ID="c1", PROJECT_ID="p1",
                           AGENT_TYPE="openhands", AGENT_MODEL="openai/test-model", OPENHANDS_PYTHON=str(python),
                           LLM_BASE_URL=llm.url + "/v1", LLM_NUM_RETRIES="0", **env)
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(ENTRYPOINT)], env=environment, cwd=repo, capture_output=True,
                          text=True, timeout=AGENT_TIMEOUT)
    print(f"[real-agent] openhands step took {time.monotonic() - started:.1f} s", file=sys.stderr)
    return done, json.loads((repo / ".jervis" / "result.json").read_text())


def processes_in(folder: Path) -> list[str]:
    """Processes working in `folder` (the entrypoint, the runner, the agent's shell and its commands)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and Path(os.readlink(entry / "cwd")).is_relative_to(folder):
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{entry.name}: {command}")
        except OSError:
            continue
    return found


def usage(turns: list[RecordedRequest]) -> int:
    """The prompt tokens the scripted server reported for these turns (4 characters a token)."""
    return sum(max(1, len(turn.text) // 4) for turn in turns)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


# ------------------------------------------------------------------ the entrypoint
def test_openhands_writes_a_file_with_native_tool_calls(openhands_python: Path, llm: ScriptedLlmServer,
                                                        tmp_path: Path, home: Path) -> None:
    """A `file_editor` call as native `tool_calls`, then the final text: the file is written, the
    tokens the server reported are the step's, the calls are streamed and capped, only the model was
    reached, and nothing the agent started is left running."""
    repo = make_git_repo(tmp_path / "repo")
    before = git(repo, "rev-parse", "HEAD").strip()
    hand_over(repo, "Create hello.txt containing hi.")
    write = {"name": "file_editor",
             "input": {"command": "create", "path": str(repo / "hello.txt"), "file_text": "hi\n"}}
    llm.script(Reply(created(repo / "hello.txt"), "Created hello.txt.", name="final"),
               Reply("Create hello.txt", "", tool_use=write, times=1, name="write"))

    done, result = run_step(repo, home, openhands_python, llm)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (repo / "hello.txt").read_text() == "hi\n"
    assert result["success"] is True and result["changedFiles"] == ["hello.txt"] and result["exitCode"] == 0
    assert result["summary"] == "Created hello.txt." and result["agent"] == "openhands"
    turns = [r for r in llm.requests if r.matched in ("write", "final")]
    assert [r.matched for r in turns] == ["write", "final"]
    assert result["tokens"]["sent"] == usage(turns) and result["tokens"]["received"] > 0
    assert all(r.stream and r.body["max_tokens"] == 4096 for r in turns)  # llama-cpp reads max_tokens only
    assert {"file_editor", "terminal"} <= {tool["function"]["name"] for tool in turns[0].body["tools"]}
    assert "refused a connection" not in done.stdout and git(repo, "rev-parse", "HEAD").strip() == before
    assert processes_in(repo) == []


def test_openhands_writes_a_file_with_tool_calls_as_text(openhands_python: Path, llm: ScriptedLlmServer,
                                                         tmp_path: Path, home: Path) -> None:
    """`LLM_NATIVE_TOOL_CALLING=false` (the embedded model's mode): no `tools` in the request, the
    tools are described in the prompt, and a `<function=…>` call in the answer's text is run. A call
    of a tool that does not exist (the embedded 1.5B model's first answer, measured) is told back to
    the model, which tries again; its tokens count too."""
    repo = make_git_repo(tmp_path / "repo")
    hand_over(repo, "Create hello.txt containing hi.")
    call = text_call("file_editor", command="create", path=str(repo / "hello.txt"), file_text="hi\n")
    llm.script(Reply(created(repo / "hello.txt"), "Created hello.txt.", name="final"),
               Reply("not found in available tools", "I will create the file.\n" + call, times=1, name="write"),
               Reply("Create hello.txt", text_call("add", a="1", b="2"), times=1, name="wrong"))

    done, result = run_step(repo, home, openhands_python, llm, LLM_NATIVE_TOOL_CALLING="false")

    assert done.returncode == 0 and (repo / "hello.txt").exists(), done.stdout[-3000:] + done.stderr[-3000:]
    assert (repo / "hello.txt").read_text() == "hi"
    assert result["success"] is True and result["changedFiles"] == ["hello.txt"]
    write = next(r for r in llm.requests if r.matched == "write")
    assert "tools" not in write.body and write.body["stop"] == ["</function"]
    assert "<function=" in write.text and "</function>" in write.text  # the format, shown in the prompt
    assert [r.matched for r in llm.requests] == ["wrong", "write", "final"]
    assert result["tokens"]["sent"] == usage(llm.requests)


def test_an_llm_error_is_a_failure(openhands_python: Path, llm: ScriptedLlmServer, tmp_path: Path, home: Path) -> None:
    repo = make_git_repo(tmp_path / "repo")
    hand_over(repo, "Create hello.txt containing hi.")
    llm.script(Reply(None, status=401, error_body=json.dumps(
        {"error": {"message": "invalid api key", "type": "invalid_request_error"}})))

    done, result = run_step(repo, home, openhands_python, llm)

    assert done.returncode == 1 and result["exitCode"] == 1 and result["success"] is False
    assert result["summary"].startswith("OpenHands error: ") and "invalid api key" in result["summary"]
    assert result["changedFiles"] == [] and not (repo / "hello.txt").exists()


def test_running_out_of_steps_is_a_failure(openhands_python: Path, llm: ScriptedLlmServer, tmp_path: Path,
                                           home: Path) -> None:
    """A model that never finishes is stopped after AGENT_MAX_ITERATIONS steps and the step fails."""
    repo = make_git_repo(tmp_path / "repo")
    hand_over(repo, "Count the files.")
    counter = iter(range(1000))
    llm.script(Reply(None, "", tool_use=lambda _: {"name": "terminal", "input": {"command": f"echo {next(counter)}"}}))

    done, result = run_step(repo, home, openhands_python, llm, AGENT_MAX_ITERATIONS="2")

    assert done.returncode == 1 and result["success"] is False
    assert "Agent reached maximum iterations limit (2)" in result["summary"]
    assert len(llm.requests) == 2
    assert "\n0\n[The command completed with exit code 0.]" in "\n" + llm.requests[1].text  # the shell's answer,
    assert "\x1b" not in llm.requests[1].text  # without the terminal's bracketed-paste escape codes


@pytest.mark.parametrize(("report", "code", "success", "summary"), [
    ({"status": "finished", "is_error": False, "summary": "Added add()."}, 0, True, "Added add()."),
    ({"status": "error", "is_error": True, "summary": "OpenHands error: boom"}, 1, False,
     "OpenHands error: boom (agent exited with code 1)"),
    ({"status": "finished", "is_error": False, "summary": "Done."}, 1, False, "Done. (agent exited with code 1)"),
    ({"status": "finished", "is_error": True, "summary": ""}, 0, False, "OpenHands ended as finished"),
    (None, 0, False, "OpenHands printed no result"),
], ids=["finished", "error", "finished-but-exit-1", "is-error", "no-result"])
def test_the_runners_last_line_and_exit_code_decide(tmp_path: Path, report: dict[str, Any] | None, code: int,
                                                    success: bool, summary: str) -> None:
    """The entrypoint's judgement of an OpenHands run (the OpenHands Python replaced by a script that
    prints what the runner would): success needs `finished`, no `is_error` and exit 0; its token
    lines are added up. (An AGENT_COMMAND would be judged as a command, not as OpenHands.)"""
    repo = make_git_repo(tmp_path / "repo")
    hand_over(repo, "Add add().")
    lines = ["[openhands] ActionEvent: terminal ls", "Tokens: 1200 sent, 30 received.",
             "Tokens: 1300 sent, 5 received."]
    if report is not None:
        lines.append(json.dumps({"type": "result", "agent": "openhands", "iterations": 1, **report}))
    stand_in = tmp_path / "python-openhands"
    stand_in.write_text(f"#!{sys.executable}\nimport sys\nprint({chr(10).join(lines)!r})\nsys.exit({code})\n")
    stand_in.chmod(0o755)
    environment = base_env(WORKSPACE_PATH=str(repo), AGENT_TYPE="openhands", OPENHANDS_PYTHON=str(stand_in))
    done = subprocess.run([sys.executable, str(ENTRYPOINT)], env=environment, cwd=repo, capture_output=True,
                          text=True, timeout=60)
    result = json.loads((repo / ".jervis" / "result.json").read_text())
    assert (result["success"], result["summary"], result["exitCode"]) == (success, summary, code)
    assert result["tokens"] == {"sent": 2500, "received": 35} and done.returncode == (0 if success else 1)


def test_the_runner_reaches_only_the_model() -> None:
    """The runner's audit hook (stdlib only, so it loads here): the model's host and port pass, any
    other name or address is refused, local sockets are not looked at."""
    guard = load_runner().NetworkGuard("http://127.0.0.1:8123/v1")
    guard("socket.getaddrinfo", ("127.0.0.1", 8123, 0, 0, 0))
    guard("socket.getaddrinfo", ("127.0.0.1", None, 0, 0, 0))
    with pytest.raises(socket.gaierror):
        guard("socket.getaddrinfo", ("raw.githubusercontent.com", 443, 0, 0, 0))
    with socket.socket(socket.AF_INET) as inet, socket.socket(socket.AF_UNIX) as local:
        guard("socket.connect", (inet, ("127.0.0.1", 8123)))
        with pytest.raises(ConnectionRefusedError):
            guard("socket.connect", (inet, ("127.0.0.1", 443)))
        with pytest.raises(ConnectionRefusedError):
            guard("socket.connect", (inet, ("140.82.112.3", 443)))
        guard("socket.connect", (local, "/var/run/nscd/socket"))
    assert guard.refused == ["raw.githubusercontent.com:443", "127.0.0.1:443", "140.82.112.3:443"]


def load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("openhands_agent", RUNNER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------- the local runner
def local_runner(tmp_path: Path, llm: ScriptedLlmServer, python: Path) -> tuple[LocalRunner, WorkspaceManager]:
    """The product's local runner with OpenHands mapped to itself, on an OpenAI-compatible local
    server (the embedded model's settings: tool calls as text)."""
    settings = Settings(data_root=tmp_path, openhands_venv=str(python.parents[1]), local_llm_api_base=llm.url + "/v1",
                        local_llm_model="openai/test-model",
                        local_agents={"openhands": "openhands", "aider": "aider", "claude": "aider", "junie": "aider"})
    workspaces = WorkspaceManager(tmp_path)
    return LocalRunner(workspaces, settings), workspaces


async def run_locally(runner: LocalRunner, workspaces: WorkspaceManager, repo: Path, instructions: str,
                      lines: list[str]) -> AgentResult:
    async def prepare() -> None:
        workspaces.prepare(repo, StepBrief(agent_type="openhands", instructions=instructions, task={"id": "t1"},
                                           files=["calc.py"]))

    return await runner.run(AgentJob(thread_id="thread-t1-abcd", task_id="t1", client_id="c1", agent_type="openhands",
                                     workspace=repo, timeout_seconds=AGENT_TIMEOUT, expect_changes=True),
                            prepare=prepare, on_log=lines.append)


@pytest.fixture
def calc_repo(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(home))
    repo = make_git_repo(tmp_path / "repo")
    (repo / "calc.py").write_text(DOCSTRING + "\n")
    git(repo, "add", "calc.py")
    git(repo, "commit", "-qm", "calc")
    return repo


DOCSTRING = '"""Arithmetic."""'
ADD = 'def add(a, b):\n    """The sum of a and b."""\n    return a + b'


async def test_the_local_runner_runs_openhands_on_the_local_server(openhands_python: Path, llm: ScriptedLlmServer,
                                                                   tmp_path: Path, calc_repo: Path) -> None:
    """A step of type `openhands` runs the real OpenHands from OPENHANDS_VENV, tool calls as text."""
    call = text_call("file_editor", command="str_replace", path=str(calc_repo / "calc.py"), old_str=DOCSTRING,
                     new_str=f"{DOCSTRING}\n\n\n{ADD}")
    llm.script(Reply(f"The file {calc_repo / 'calc.py'} has been edited", "Added add() to calc.py.", name="final"),
               Reply("Add a function add", call, times=1, name="edit"))
    runner, workspaces = local_runner(tmp_path, llm, openhands_python)
    lines: list[str] = []

    result = await run_locally(runner, workspaces, calc_repo, "Add a function add(a, b) to calc.py.", lines)

    assert result.success, result.summary + "\n" + result.log_tail
    assert result.program == "openhands" and result.changed_files == ["calc.py"]
    assert (calc_repo / "calc.py").read_text() == f"{DOCSTRING}\n\n\n{ADD}\n"
    assert result.summary == "Added add() to calc.py."
    turns = [r for r in llm.requests if r.matched in ("edit", "final")]
    assert result.tokens is not None and result.tokens["sent"] == usage(turns)
    assert "tools" not in turns[0].body and turns[0].model == "test-model"
    assert git(calc_repo, "status", "--porcelain").splitlines() == [" M calc.py"]  # nothing else left behind
    assert processes_in(calc_repo) == []


async def test_openhands_that_changes_nothing_is_not_a_success(openhands_python: Path, llm: ScriptedLlmServer,
                                                               tmp_path: Path, calc_repo: Path) -> None:
    """OpenHands finishes without a tool call (its exit is 0, its result `finished`): the service
    refuses a code step that changed nothing."""
    llm.script(Reply("Add a function add", "calc.py already does what is asked.", name="idle"))
    runner, workspaces = local_runner(tmp_path, llm, openhands_python)
    lines: list[str] = []

    result = await run_locally(runner, workspaces, calc_repo, "Add a function add(a, b) to calc.py.", lines)

    assert result.success is False and result.unchanged is True and result.changed_files == []
    assert result.exit_code == 0 and result.summary == "calc.py already does what is asked."
    assert '{"type": "result", "agent": "openhands", "status": "finished"' in "\n".join(lines)


async def test_cancelling_openhands_leaves_nothing_running(openhands_python: Path, llm: ScriptedLlmServer,
                                                           tmp_path: Path, calc_repo: Path) -> None:
    """A cancel stops the entrypoint's process group; the runner kills what the agent started too
    (its shell runs in a session of its own, and a command it left in the background)."""
    seconds = 3000 + os.getpid() % 997  # a sleep no other test runs
    command = f"echo working; (sleep {seconds} &); sleep {seconds}"
    llm.script(Reply("Add a function add", text_call("terminal", command=command), name="work"))
    runner, workspaces = local_runner(tmp_path, llm, openhands_python)
    lines: list[str] = []
    running = asyncio.create_task(run_locally(runner, workspaces, calc_repo, "Add a function add(a, b).", lines))
    deadline = time.monotonic() + 120
    while sum(f"sleep {seconds}" in line for line in processes_in(calc_repo)) < 2:
        assert time.monotonic() < deadline and not running.done(), "\n".join(lines[-30:])
        await asyncio.sleep(0.2)

    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running

    assert processes_in(calc_repo) == []
    assert not [line for line in processes_in(Path("/")) if f"sleep {seconds}" in line]
    result = json.loads((calc_repo / ".jervis" / "result.json").read_text())  # written within the grace
    assert result["success"] is False and result["summary"].startswith("Agent stopped by SIGTERM")
