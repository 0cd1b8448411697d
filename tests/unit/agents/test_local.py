"""LocalRunner (app/agents/local.py) with the built-in scripted agent as a real subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from app.agents.base import AgentJob
from app.agents.control import AgentControl, use_control
from app.agents.local import LocalRunner
from app.agents.local_process import runs_dir
from app.agents.log_lines import MAX_LINE_CHARS, LineCutter
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from tests.support import SCRIPTED_AGENT, file_block, git

AGENT = SCRIPTED_AGENT


def job(workspace: Path, timeout: float = 30) -> AgentJob:
    """`command`: the scripted agent reports for itself, unlike aider (judged by exit code and git)."""
    return AgentJob(thread_id="thread-t1-abcd", task_id="t1", client_id="c1", agent_type="command",
                    workspace=workspace, timeout_seconds=timeout)


def hand_over(manager: WorkspaceManager, workspace: Path, instructions: str) -> Callable[[], Awaitable[None]]:
    """The runner's `prepare`: writes the hand-over files when the agent is about to start."""
    async def prepare() -> None:
        manager.prepare(workspace, StepBrief(agent_type="command", instructions=instructions, task={"id": "t1"}))
    return prepare


def runner(manager: WorkspaceManager, command: list[str] | None = None) -> LocalRunner:
    return LocalRunner(manager, Settings(local_agent_command=command or AGENT))


def agent_pids(workspace: Path) -> list[int]:
    """Live processes whose working directory is this test's workspace (the agent and its children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") == str(workspace.resolve()):
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


async def wait_for_agent(workspace: Path, lines: list[str], marker: str, timeout: float = 10) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(marker in line for line in lines) and (pids := agent_pids(workspace)):
            return pids
        await asyncio.sleep(0.02)
    raise AssertionError(f"agent did not log {marker!r}: {lines}")


async def test_run_succeeds_with_changed_files_seen_by_git(manager: WorkspaceManager, repo: Path) -> None:
    prepare = hand_over(manager, repo, file_block("src/health.py", "def health():\n    return 'ok'") + "\n"
                        + file_block("README.md", "# new readme"))
    # A wrapper writes a file the agent never claims; git must still report it.
    wrapped = runner(manager, ["sh", "-c", f"echo x > unclaimed.txt && exec {shlex.join(AGENT)}"])
    result = await wrapped.run(job(repo), prepare=prepare)
    assert result.success is True and result.exit_code == 0
    assert result.summary == "Wrote 2 file(s): src/health.py, README.md"
    assert result.changed_files == ["README.md", "src/health.py", "unclaimed.txt"]
    assert (repo / "src/health.py").read_text() == "def health():\n    return 'ok'\n"


async def test_run_ignores_files_dirty_before_the_step_and_agent_files(manager: WorkspaceManager,
                                                                      repo: Path) -> None:
    (repo / "user_wip.py").write_text("user's work in progress\n")
    result = await runner(manager).run(job(repo), prepare=hand_over(manager, repo, file_block("a.py", "a = 1")))
    assert result.changed_files == ["a.py"]
    assert not any(path.startswith(".jervis") for path in result.changed_files)


async def test_run_uses_the_agents_claim_when_workspace_is_not_a_git_repo(manager: WorkspaceManager,
                                                                         tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    wrapped = runner(manager, ["sh", "-c", f"echo x > unclaimed.txt && exec {shlex.join(AGENT)}"])
    result = await wrapped.run(job(plain), prepare=hand_over(manager, plain, file_block("a.py", "a = 1")))
    assert result.success is True
    assert result.changed_files == ["a.py"]


async def test_run_fails_with_the_reason_when_agent_reports_failure(manager: WorkspaceManager, repo: Path) -> None:
    result = await runner(manager).run(job(repo), prepare=hand_over(
        manager, repo, "@@FAIL tests do not pass\n" + file_block("a.py", "a = 1")))
    assert (result.success, result.exit_code) == (False, 0)
    assert "tests do not pass" in result.summary


async def test_run_fails_when_agent_exits_non_zero_without_result(manager: WorkspaceManager, repo: Path) -> None:
    result = await runner(manager).run(job(repo), prepare=hand_over(manager, repo, "@@EXIT 3\n"))
    assert result.success is False and result.exit_code == 3
    assert "no .jervis/result.json" in result.summary


async def test_run_fails_when_agent_exits_zero_without_result(manager: WorkspaceManager, repo: Path) -> None:
    result = await runner(manager).run(job(repo), prepare=hand_over(
        manager, repo, "@@NO_RESULT\n" + file_block("a.py", "a = 1")))
    assert (result.success, result.exit_code) == (False, 0)
    assert "no .jervis/result.json" in result.summary
    assert result.changed_files == []


async def test_run_fails_when_agent_claims_success_but_exits_non_zero(manager: WorkspaceManager,
                                                                     repo: Path) -> None:
    wrapped = runner(manager, ["sh", "-c", f"{shlex.join(AGENT)}; exit 2"])
    result = await wrapped.run(job(repo), prepare=hand_over(manager, repo, file_block("a.py", "a = 1")))
    assert (result.success, result.exit_code) == (False, 2)
    assert "2" in result.summary


async def test_run_fails_and_kills_the_agent_when_it_times_out(manager: WorkspaceManager, repo: Path) -> None:
    lines: list[str] = []
    started = time.monotonic()
    running = asyncio.create_task(runner(manager).run(job(repo, timeout=1), on_log=lines.append,
                                                      prepare=hand_over(manager, repo, "@@SLEEP 30\n")))
    seen: set[int] = set()
    while not running.done():  # remember the agent's pid while it sleeps
        seen.update(agent_pids(repo))
        await asyncio.sleep(0.02)
    result = await running
    assert time.monotonic() - started < 8
    assert result.success is False and "timed out after 1 s" in result.summary
    assert "sleeping 30s" in result.log_tail
    assert seen and not any(alive(pid) for pid in seen)
    assert agent_pids(repo) == [] and not any(runs_dir(manager.root).iterdir())


async def test_cancelling_the_run_kills_the_agent_before_it_writes(manager: WorkspaceManager, repo: Path) -> None:
    lines: list[str] = []
    prepare = hand_over(manager, repo, "@@SLEEP 1\n" + file_block("late.txt", "written after the sleep"))
    running = asyncio.create_task(runner(manager).run(job(repo), on_log=lines.append, prepare=prepare))
    pids = await wait_for_agent(repo, lines, "sleeping 1")
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert not any(alive(pid) for pid in pids) and not any(runs_dir(manager.root).iterdir())
    await asyncio.sleep(1.3)  # past the moment the agent would have written the file
    assert not (repo / "late.txt").exists()
    result = repo / ".jervis" / "result.json"
    assert not result.exists() or '"success": false' in result.read_text()  # killed: never a success
    assert agent_pids(repo) == []


async def test_run_passes_every_output_line_to_on_log(manager: WorkspaceManager, repo: Path) -> None:
    lines: list[str] = []
    result = await runner(manager).run(job(repo), on_log=lines.append, prepare=hand_over(
        manager, repo, file_block("a.py", "a = 1") + "\n" + file_block("b.py", "b = 2")))
    agent_lines = [line for line in lines if not line.startswith(("[jervis-entrypoint]", "instructions| "))]
    assert agent_lines[0].startswith("scripted agent: ") and agent_lines[1:] == ["wrote a.py", "wrote b.py"]
    assert "instructions| <<<FILE a.py" in lines  # the scripted agent echoes what it was told
    assert result.log_tail.splitlines() == lines


async def test_run_gives_the_agent_its_job_in_the_environment(manager: WorkspaceManager, repo: Path) -> None:
    command = ["sh", "-c", 'echo "$TASK_ID|$CLIENT_ID|$AGENT_TYPE|$ALLOW_GIT|$WORKSPACE_PATH|$JERVIS_MODE"; '
                           f"exec {shlex.join(AGENT)}"]
    lines: list[str] = []
    await runner(manager, command).run(job(repo), on_log=lines.append, prepare=hand_over(manager, repo, ""))
    assert f"t1|c1|command|false|{repo}|agent" in lines


async def test_run_leaves_no_commit_when_the_agent_changes_files(manager: WorkspaceManager, repo: Path) -> None:
    await runner(manager).run(job(repo), prepare=hand_over(manager, repo, file_block("a.py", "a = 1")))
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"


async def test_an_output_line_longer_than_the_reader_limit_is_cut_not_fatal(manager: WorkspaceManager,
                                                                           repo: Path) -> None:
    """A 200 000-character line (over asyncio's 64 KiB readline limit) used to stop the reader;
    the agent goes on, its later lines and its result arrive, the long line is cut."""
    long_line = f"{sys.executable} -c \"print('x' * 200000); print('after the long line')\""
    wrapped = runner(manager, ["sh", "-c", f"{long_line} && exec {shlex.join(AGENT)}"])
    lines: list[str] = []

    result = await wrapped.run(job(repo), on_log=lines.append,
                               prepare=hand_over(manager, repo, file_block("a.py", "a = 1")))

    assert result.success and result.changed_files == ["a.py"]
    cut = next(line for line in lines if line.startswith("xxx"))
    assert cut == "x" * MAX_LINE_CHARS + f" … (line cut at {MAX_LINE_CHARS} characters)"
    assert "after the long line" in lines


def test_line_cutter_splits_chunks_and_keeps_an_unterminated_last_line() -> None:
    cutter = LineCutter(max_chars=10)
    lines = cutter.feed(b"one\ntw") + cutter.feed(b"o\n" + b"y" * 50 + b"\nlast")
    assert lines + cutter.flush() == ["one", "two", "y" * 10 + " … (line cut at 10 characters)", "last"]


async def test_the_agent_sees_an_allow_listed_environment_without_the_services_secrets(manager: WorkspaceManager,
                                                                                       repo: Path) -> None:
    service_environ = {
        "PATH": os.environ["PATH"], "HOME": str(repo.parent), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "MONGODB_URL": "mongodb://orchestrator:db-password@db:27017", "API_TOKEN": "service-api-token-0001",
        "GROQ_API_KEY": "gsk_unrelated_provider_0001", "ANTHROPIC_API_KEY": "sk-ant-service-tier-0001",
        "OPENAI_API_KEY": "sk-agent-openai-0001", "HF_HOME": "/cache/hf", "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock",
    }
    settings = Settings(local_agent_command=AGENT, agent_secret_keys=["OPENAI_API_KEY", "GIT_TOKEN"],
                        agent_env_passthrough=["HF_HOME"])
    result = await LocalRunner(manager, settings, environ=service_environ).run(
        job(repo), prepare=hand_over(manager, repo, "@@ENV"))

    seen = json.loads((repo / ".jervis" / "env.json").read_text(encoding="utf-8"))
    assert result.success
    # no provider key either: its route (a model no provider is named for) needs none (issue 40)
    assert not {"MONGODB_URL", "API_TOKEN", "GROQ_API_KEY", "ANTHROPIC_API_KEY", "SSH_AUTH_SOCK",
                "OPENAI_API_KEY", "GIT_TOKEN"} & set(seen)
    assert not [value for value in seen.values() if "db-password" in value or "service-" in value]
    assert seen["HF_HOME"] == "/cache/hf"
    assert {name: seen[name] for name in ("HOME", "LANG", "LC_ALL", "TASK_ID", "WORKSPACE_PATH", "AGENT_TYPE")} == {
        "HOME": str(repo.parent), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TASK_ID": "t1",
        "WORKSPACE_PATH": str(repo), "AGENT_TYPE": "command"}
    assert seen["PATH"] == os.environ["PATH"]


async def test_a_user_cancel_stops_the_agent_even_when_the_task_is_not_cancelled(
        manager: WorkspaceManager, repo: Path) -> None:
    """The graph runs nodes in tasks of its own, so a run task's cancellation may reach the runner
    late; the run's `AgentControl` says "cancelled" directly and the runner stops at its next poll."""
    control = AgentControl()
    lines: list[str] = []
    prepare = hand_over(manager, repo, "@@SLEEP 30\n" + file_block("late.txt", "never"))

    async def in_run() -> object:
        use_control(control)  # as the run manager does at the start of the run task
        return await runner(manager).run(job(repo), on_log=lines.append, prepare=prepare)

    running = asyncio.create_task(in_run())
    pids = await wait_for_agent(repo, lines, "sleeping 30")
    control.cancel()  # and no running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(running, 10)
    assert not any(alive(pid) for pid in pids) and agent_pids(repo) == []
    assert not (repo / "late.txt").exists()
