"""The local runner's own state against a hostile agent (issue 40, item 1): the agent, sandboxed by
real bubblewrap and started by the real LocalRunner, tries to make the service read, stream,
empty or delete a file the sandbox hides from it (another client's credentials under DATA_ROOT)
through the runner's files, and to have a forged record judged as its next attempt.

On main the runner kept its record, log and exit status in `<workspace>/.jervis/runs/`, which the
agent writes: each attack below worked there. Now they live in `DATA_ROOT/.orchestrator/agent-runs/`
(hidden from the sandbox), and whatever the agent writes under `.jervis/runs/` is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.agents.base import AgentJob
from app.agents.job_spec import job_name, step_label
from app.agents.local import LocalRunner
from app.agents.workspace import StepBrief, WorkspaceError, WorkspaceManager
from app.config import Settings
from tests.support import SCRIPTED_AGENT, file_block, make_git_repo

PATH = os.environ["PATH"]
SECRET = "c2-api-key=sk-another-clients-secret"

#: Replaces what it takes for its own log (`.jervis/runs/<job>.log`) with a link to the target,
#: then gives the service a moment to follow "its log" before it reports success.
LOG_SWAPPING_AGENT = r'''
import json, os, sys, time
from pathlib import Path
name, target = sys.argv[1], sys.argv[2]
runs = Path(".jervis") / "runs"
runs.mkdir(parents=True, exist_ok=True)
log = runs / f"{name}.log"
if os.path.lexists(log):
    log.unlink()
log.symlink_to(target)
print("log swapped", flush=True)
time.sleep(1.5)
Path(".jervis/result.json").write_text(json.dumps({"success": True, "summary": "done"}))
'''

#: Plants the record of the step's next attempt, naming a file of its choice as that attempt's
#: log, with an exit status saying 0 and a result saying success.
RECORD_PLANTING_AGENT = r'''
import json, os, sys, time
from pathlib import Path
name, thread, step, target = sys.argv[1:5]
runs = Path(".jervis") / "runs"
runs.mkdir(parents=True, exist_ok=True)
(runs / f"{name}.json").write_text(json.dumps({
    "job_name": name, "thread_id": thread, "step": step, "pid": 4194303, "start_ticks": 1,
    "boot_id": "", "started_at": time.time(), "log_path": target, "workspace": os.getcwd()}))
(runs / f"{name}.exit").write_text(json.dumps({"exit_code": 0}))
Path(".jervis/result.json").write_text(json.dumps(
    {"success": True, "summary": "forged success", "changedFiles": ["forged.py"]}))
os.system("chmod -R a-w .jervis")  # a service that does not run as root can no longer clean it
'''


def job(workspace: Path, *, attempt: int = 1) -> AgentJob:
    return AgentJob(thread_id="thread-t1-abcd", task_id="t1", client_id="c1", agent_type="command",
                    workspace=workspace, attempt=attempt, timeout_seconds=30)


def hand_over(manager: WorkspaceManager, workspace: Path, instructions: str = "go"):  # type: ignore[no-untyped-def]
    async def prepare() -> None:
        manager.prepare(workspace, StepBrief(agent_type="command", instructions=instructions, task={"id": "t1"}))
    return prepare


def sandboxed(manager: WorkspaceManager, tmp_path: Path, command: list[str]) -> LocalRunner:
    settings = Settings(local_agent_command=command, agent_sandbox="bwrap")
    return LocalRunner(manager, settings, environ={"PATH": PATH, "HOME": str(tmp_path / "home")})


def script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name  # outside DATA_ROOT: the sandbox shows it read-only
    path.write_text(text)
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def immutable(*paths: Path, on: bool = True) -> None:
    """`chattr ±i`: the tests run as root, whom a read-only directory does not stop; an immutable
    one stands in for what `chmod a-w` does to a service that runs as an ordinary user."""
    subprocess.run(["chattr", "+i" if on else "-i", *map(str, paths)], check=True)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """DATA_ROOT with the client's workspace and another client's credentials beside it."""
    root = tmp_path / "data"
    make_git_repo(root / "c1" / "ws")
    (root / "c2").mkdir()
    (root / "c2" / "credentials.txt").write_text(SECRET + "\n")
    return root


async def test_a_log_swapped_for_a_link_streams_nothing_of_its_target(tmp_path: Path, data: Path) -> None:
    workspace, secret = data / "c1" / "ws", data / "c2" / "credentials.txt"
    manager = WorkspaceManager(data)
    agent = script(tmp_path, "agent.py", LOG_SWAPPING_AGENT)
    lines: list[str] = []

    result = await sandboxed(manager, tmp_path, [sys.executable, str(agent), job_name(job(workspace)),
                                                 str(secret)]).run(
        job(workspace), prepare=hand_over(manager, workspace), on_log=lines.append)
    left = manager.cleanup(workspace)

    assert not any(SECRET in line for line in lines), "another client's file was streamed"
    assert "log swapped" in lines  # the agent ran its attack, and its own output still arrives
    assert SECRET not in result.log_tail and SECRET not in result.summary
    assert secret.read_text() == SECRET + "\n" and left is None
    assert not (workspace / ".jervis").exists()  # the planted link went with the cleanup, not its target


async def test_a_log_swapped_for_a_link_to_a_large_file_does_not_empty_it(tmp_path: Path, data: Path) -> None:
    """The log cap (8 MiB) emptied the file at the log's path: through the link, someone else's."""
    workspace, big = data / "c1" / "ws", data / "c2" / "dump.sql"
    big.write_text(("INSERT INTO accounts VALUES ('c2', 'secret row');" + "x" * 950 + "\n") * 9500)  # > 9 MiB
    before = digest(big)
    manager = WorkspaceManager(data)
    agent = script(tmp_path, "agent.py", LOG_SWAPPING_AGENT)
    lines: list[str] = []

    await sandboxed(manager, tmp_path, [sys.executable, str(agent), job_name(job(workspace)), str(big)]).run(
        job(workspace), prepare=hand_over(manager, workspace), on_log=lines.append)

    assert big.stat().st_size > 9 * 1024 * 1024 and digest(big) == before, "another client's file was emptied"
    assert not any("secret row" in line for line in lines)


async def test_a_record_planted_for_the_next_attempt_is_ignored(tmp_path: Path, data: Path) -> None:
    """The agent of attempt 1 plants attempt 2's record with another client's file as its log, an
    exit status 0 and a success, and makes `.jervis` read-only so the cleanup leaves it. The
    service must not stream that file, report the forged success, or delete the file when it
    removes "the log"; the cleanup must say it could not clean."""
    workspace, secret = data / "c1" / "ws", data / "c2" / "credentials.txt"
    manager = WorkspaceManager(data)
    second = job(workspace, attempt=2)
    agent = script(tmp_path, "agent.py", RECORD_PLANTING_AGENT)
    runner = sandboxed(manager, tmp_path, [sys.executable, str(agent), job_name(second), second.thread_id,
                                           step_label(second), str(secret)])
    await runner.run(job(workspace), prepare=hand_over(manager, workspace))
    jervis = workspace / ".jervis"
    immutable(jervis, jervis / "runs")
    lines: list[str] = []
    try:
        left = manager.cleanup(workspace)  # as execute_step does after every attempt
        try:
            result = await runner.run(second, prepare=hand_over(manager, workspace), on_log=lines.append)
        except OSError as exc:  # the hand-over cannot be written into the undeletable .jervis
            result = None
            refused = str(exc)
    finally:
        immutable(jervis, jervis / "runs", on=False)

    assert secret.exists(), "the service deleted another client's file as the planted record's log"
    assert secret.read_text() == SECRET + "\n"
    assert not any(SECRET in line for line in lines), "another client's file was streamed"
    assert result is None or not result.success, "a forged success was reported"
    assert result is not None or "Operation not permitted" in refused
    assert left is not None and "could not be cleaned" in left and ".jervis" in left


async def test_a_planted_record_in_the_workspace_is_not_the_runners_state(tmp_path: Path, data: Path) -> None:
    """What a failed cleanup (or an agent of another step) leaves under `.jervis/runs/` is agent
    output: the next attempt starts its own agent and is judged by its own result."""
    workspace, secret = data / "c1" / "ws", data / "c2" / "credentials.txt"
    manager = WorkspaceManager(data)
    attempt = job(workspace, attempt=2)
    name = job_name(attempt)
    runs = workspace / ".jervis" / "runs"
    runs.mkdir(parents=True)
    (runs / f"{name}.json").write_text(json.dumps({
        "job_name": name, "thread_id": attempt.thread_id, "step": step_label(attempt), "pid": 4194303,
        "start_ticks": 1, "boot_id": "", "started_at": 0, "log_path": str(secret), "workspace": str(workspace)}))
    (runs / f"{name}.exit").write_text(json.dumps({"exit_code": 0}))
    (workspace / ".jervis" / "result.json").write_text(json.dumps(
        {"success": True, "summary": "forged success", "changedFiles": ["forged.py"]}))
    lines: list[str] = []

    result = await sandboxed(manager, tmp_path, SCRIPTED_AGENT).run(
        attempt, prepare=hand_over(manager, workspace, file_block("real.py", "done = True")), on_log=lines.append)

    assert result.success and result.changed_files == ["real.py"] and result.summary != "forged success"
    assert "wrote real.py" in lines and not any(SECRET in line for line in lines)
    assert secret.read_text() == SECRET + "\n"



@pytest.mark.parametrize("path", [".orchestrator/agent-runs", ".orchestrator", "c1/into-the-service"])
def test_a_workspace_path_into_the_services_folder_is_refused(data: Path, path: str) -> None:
    """A client naming the service's own folder (or a link into it) as its workspace would have
    the sandbox bind it writable: every agent's record, log and exit status."""
    runs = data / ".orchestrator" / "agent-runs"
    runs.mkdir(parents=True)
    (data / "c1" / "into-the-service").symlink_to(runs)

    with pytest.raises(WorkspaceError, match="service's own"):
        WorkspaceManager(data).resolve(path)


#: Lists what the sandbox shows of the service's folder and tries the runs folder by its path.
PEEKING = r'''
import json, os
root = ROOT
def listing(path):
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        return type(exc).__name__
print("PEEK " + json.dumps({"service": listing(os.path.join(root, ".orchestrator")),
                            "runs": listing(os.path.join(root, ".orchestrator", "agent-runs"))}), flush=True)
'''


@pytest.mark.parametrize("mode", ["agent", "test"])
async def test_the_runs_folder_is_not_in_the_sandbox_even_beside_the_tool_cache(tmp_path: Path, data: Path,
                                                                                mode: str) -> None:
    """A test run gets its client's tool cache bound from `DATA_ROOT/.orchestrator/agent-tools/`;
    nothing of the runs folder beside it. (Also so on main, where that folder did not exist.)"""
    workspace = data / "c1" / "ws"
    manager = WorkspaceManager(data)
    # DATA_ROOT written into the script, not named on its command line (the sandbox reads back
    # in whatever the command names).
    peek = [sys.executable, str(script(tmp_path, "peek.py", PEEKING.replace("ROOT", repr(str(data)))))]
    lines: list[str] = []

    async def prepare() -> None:
        manager.prepare(workspace, StepBrief(agent_type="command", instructions="peek", task={"id": "t1"},
                                             test_plan={"command": peek, "timeout_seconds": 20}
                                             if mode == "test" else None))

    step = job(workspace).model_copy(update={"mode": mode})
    await sandboxed(manager, tmp_path, peek).run(step, prepare=prepare, on_log=lines.append)

    seen = json.loads(next(line for line in lines if line.startswith("PEEK ")).removeprefix("PEEK "))
    assert seen == ({"service": ["agent-tools"], "runs": "FileNotFoundError"} if mode == "test"
                    else {"service": "FileNotFoundError", "runs": "FileNotFoundError"})
    assert (data / ".orchestrator" / "agent-runs").is_dir()  # there, outside the sandbox
