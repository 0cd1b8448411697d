"""The local agent's bubblewrap sandbox (app/agents/sandbox.py): the command it builds, the refusal
without one, and real agents under real bwrap trying to get out of their workspace."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from pathlib import Path

from app.agents.base import AgentJob
from app.agents.local import LocalRunner
from app.agents.sandbox import AgentSandbox, probe
from app.agents.sandbox_git import worktree_git_dirs
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from tests.support import SCRIPTED_AGENT, file_block, git, make_git_repo

REPO = Path(__file__).resolve().parents[3]
PATH = os.environ["PATH"]

#: Tries to leave its workspace in every way the sandbox forbids, writes one file inside, and
#: reports each outcome (`ok` or the error's name) as its summary.
ESCAPING_AGENT = r'''
import json, os, subprocess, sys
from pathlib import Path
targets = json.loads(os.environ["PROBE_TARGETS"])

def attempt(action):
    try:
        action()
        return "ok"
    except OSError as exc:
        return type(exc).__name__

report = {
    "write_outside": attempt(lambda: Path(targets["outside"]).write_text("escaped")),
    "write_project": attempt(lambda: Path(targets["project"]).write_text("escaped")),
    "write_other_workspace": attempt(lambda: Path(targets["other"]).write_text("escaped")),
    "read_home": attempt(lambda: Path(targets["home_secret"]).read_text()),
    "unmount_home": subprocess.run(["umount", targets["home"]], capture_output=True).returncode,
    "read_home_unmounted": attempt(lambda: Path(targets["home_secret"]).read_text()),
    "read_service_data": attempt(lambda: Path(targets["service_data"]).read_text()),
    "data_root_holds": sorted(os.listdir(targets["data_root"])),
    "write_inside": attempt(lambda: Path("inside.txt").write_text("made in the sandbox\n")),
}
(Path(".jervis") / "result.json").write_text(json.dumps({"success": True, "summary": json.dumps(report)}))
'''


def job(workspace: Path, *, mode: str = "agent", client: str = "c1", timeout: float = 30) -> AgentJob:
    return AgentJob(thread_id="thread-t1-abcd", task_id="t1", client_id=client, agent_type="command",
                    workspace=workspace, mode=mode, timeout_seconds=timeout)  # type: ignore[arg-type]


def hand_over(manager: WorkspaceManager, workspace: Path, instructions: str = "go"):  # type: ignore[no-untyped-def]
    async def prepare() -> None:
        manager.prepare(workspace, StepBrief(agent_type="command", instructions=instructions, task={"id": "t1"}))
    return prepare


def position(argv: list[str], *pair: str) -> int:
    """Where `pair` (an option and its paths) starts in argv; fails when it is not there."""
    for index in range(len(argv) - len(pair) + 1):
        if argv[index:index + len(pair)] == list(pair):
            return index
    raise AssertionError(f"{pair} not in {argv}")


def bin_without_bwrap(tmp_path: Path) -> str:
    """A PATH with git and sh but no bwrap: a machine where bubblewrap is not installed."""
    folder = tmp_path / "bin-without-bwrap"
    folder.mkdir()
    for name in ("git", "sh", "env"):
        (folder / name).symlink_to(next(Path(d) / name for d in PATH.split(os.pathsep) if (Path(d) / name).exists()))
    return str(folder)


# ------------------------------------------------------------------ the command it builds
def test_the_workspace_is_bound_after_tmp_and_after_everything_hidden(tmp_path: Path) -> None:
    home, data, secret = tmp_path / "home", tmp_path / "data", tmp_path / "service.env"
    workspace = data / "c1" / "ws"
    for folder in (home, workspace):
        folder.mkdir(parents=True)
    secret.write_text("API_TOKEN=x")
    sandbox = AgentSandbox(Settings(agent_sandbox_hide=[str(secret)]), {"HOME": str(home), "PATH": PATH},
                           data_root=data)
    argv = sandbox.bwrap_argv(job(workspace), "/usr/bin/bwrap", ["python", "entrypoint.py"], {"PATH": PATH})

    assert argv[:3] == ["env", "--ignore-signal=TERM", "/usr/bin/bwrap"]
    assert argv[-5:] == ["--", "env", "--default-signal=TERM", "python", "entrypoint.py"]
    bound = position(argv, "--bind", str(workspace), str(workspace))
    assert position(argv, "--ro-bind", "/", "/") < position(argv, "--tmpfs", "/tmp") < bound
    assert position(argv, "--tmpfs", "/tmp") < position(argv, "--tmpfs", str(home)) < bound
    assert position(argv, "--tmpfs", str(data)) < bound
    assert position(argv, "--ro-bind", "/dev/null", str(secret)) < bound  # a file is covered, not emptied
    assert {"--unshare-all", "--die-with-parent"} <= set(argv)
    assert "--share-net" not in argv  # the sandbox's network is its own (issue 40)
    assert argv[position(argv, "--cap-drop") + 1] == "ALL"  # as root, user-namespace caps could unmount the tmpfs
    assert "--new-session" not in argv  # the runner stops the agent through its process group
    assert argv[position(argv, "--chdir") + 1] == str(workspace)


def test_what_the_entrypoint_needs_from_a_hidden_home_is_read_back_without_the_data_under_it(tmp_path: Path) -> None:
    """A project checked out in the home directory: the project (the entrypoint, its programs) is
    read back read-only, and its `.data` inside it hidden again, before the workspace is bound."""
    home = tmp_path / "home"
    project, data = home / "src" / "jervis", home / "src" / "jervis" / ".data"
    workspace = data / "workspaces" / "c1" / "ws"
    workspace.mkdir(parents=True)
    sandbox = AgentSandbox(Settings(agent_sandbox_hide=[str(data)]), {"HOME": str(home), "PATH": PATH},
                           data_root=data / "workspaces", project_root=project)
    argv = sandbox.bwrap_argv(job(workspace), "bwrap", ["python", str(project / "entrypoint.py")], {"PATH": PATH})

    hide_home = position(argv, "--tmpfs", str(home))
    read_back = position(argv, "--ro-bind", str(project), str(project))
    hide_again = position(argv, "--tmpfs", str(data))
    assert hide_home < read_back < hide_again < position(argv, "--bind", str(workspace), str(workspace))
    assert argv.count(str(data / "workspaces")) == 0  # inside the hidden .data: no mount of its own


def test_a_goal_worktree_gets_its_main_workspace_git_dir_bound_read_only(tmp_path: Path) -> None:
    main = make_git_repo(tmp_path / "data" / "c1" / "repo")
    worktree = tmp_path / "data" / "c1" / "repo.jervis-goals" / "thread-g1"
    git(main, "worktree", "add", "-q", "-b", "jervis/goals/thread-g1", str(worktree))
    assert Path(git(worktree, "rev-parse", "--git-common-dir").strip()).resolve() == (main / ".git").resolve()

    argv = AgentSandbox(Settings(), {"PATH": PATH}, data_root=tmp_path / "data").bwrap_argv(
        job(worktree), "bwrap", ["true"], {})
    assert worktree_git_dirs(worktree) == [(main / ".git").resolve()]
    git_dir = str((main / ".git").resolve())
    assert position(argv, "--tmpfs", str(tmp_path / "data")) < position(argv, "--ro-bind", git_dir, git_dir)
    dot_git = str(worktree.resolve() / ".git")  # its `gitdir:` file too: the agent cannot point it elsewhere
    assert position(argv, "--bind", str(worktree.resolve()), str(worktree.resolve())) < position(
        argv, "--ro-bind", dot_git, dot_git)
    assert "--bind" not in [argv[i] for i in range(len(argv) - 1) if argv[i + 1] == git_dir]


def test_a_worktree_git_file_pointing_elsewhere_binds_nothing(tmp_path: Path) -> None:
    """An agent may rewrite `.git`: the next step must not get HOME (or anything) bound writable."""
    forged = tmp_path / "data" / "c1" / "repo.jervis-goals" / "thread-g1"
    forged.mkdir(parents=True)
    target = make_git_repo(tmp_path / "home" / "dotfiles")
    (forged / ".git").write_text(f"gitdir: {target / '.git'}\n")
    plain = tmp_path / "data" / "c1" / "plain"
    plain.mkdir()
    (plain / ".git").write_text(f"gitdir: {target / '.git'}\n")

    assert worktree_git_dirs(forged) == [] and worktree_git_dirs(plain) == []


def test_only_test_runs_get_the_clients_tool_cache(tmp_path: Path) -> None:
    workspace = tmp_path / "data" / "ws"
    workspace.mkdir(parents=True)
    sandbox = AgentSandbox(Settings(), {"PATH": PATH, "TMPDIR": "/var/tmp/elsewhere"}, data_root=tmp_path / "data")
    tests = sandbox.sandbox_env(job(workspace, mode="test"), {"TMPDIR": "/var/tmp/elsewhere"})
    other_client = sandbox.tools_dir(job(workspace, mode="test", client="c2"))

    tools = tests["JERVIS_TOOLS_DIR"]
    assert tools.startswith(str(tmp_path / "data" / ".orchestrator" / "agent-tools")) and Path(tools).is_dir()
    assert str(other_client) != tools and tests["TMPDIR"] == "/tmp"
    assert position(sandbox.bwrap_argv(job(workspace, mode="test"), "bwrap", ["true"], {}), "--bind", tools, tools)
    assert "JERVIS_TOOLS_DIR" not in sandbox.sandbox_env(job(workspace), {})
    assert tools not in sandbox.bwrap_argv(job(workspace), "bwrap", ["true"], {})


def test_writable_paths_that_exist_are_bound_after_the_workspace(tmp_path: Path) -> None:
    workspace, cache = tmp_path / "data" / "ws", tmp_path / "home" / ".m2"
    for folder in (workspace, cache):
        folder.mkdir(parents=True)
    settings = Settings(agent_sandbox_writable=[str(cache), str(tmp_path / "missing")])
    sandbox = AgentSandbox(settings, {"PATH": PATH, "HOME": str(tmp_path / "home")}, data_root=tmp_path / "data")
    argv = sandbox.bwrap_argv(job(workspace), "bwrap", ["true"], {})

    assert position(argv, "--tmpfs", str(tmp_path / "home")) < position(argv, "--bind", str(workspace), str(workspace))
    assert position(argv, "--bind", str(workspace), str(workspace)) < position(argv, "--bind", str(cache), str(cache))
    assert str(tmp_path / "missing") not in argv


# ------------------------------------------------------------------ without a sandbox
async def test_without_bwrap_every_program_that_can_run_commands_is_refused(tmp_path: Path) -> None:
    environ = {"PATH": bin_without_bwrap(tmp_path)}
    auto = AgentSandbox(Settings(), environ, data_root=tmp_path)
    testing = AgentSandbox(Settings(aider_args=["--auto-test", "--test-cmd", "pytest"]), environ, data_root=tmp_path)
    required = AgentSandbox(Settings(agent_sandbox="bwrap"), environ, data_root=tmp_path)

    refused = await auto.confine(job(tmp_path), ["entrypoint"], {}, program="command")
    assert refused.refusal is not None and refused.argv == []
    assert "apt-get install bubblewrap" in refused.refusal and "AGENT_SANDBOX=off" in refused.refusal
    assert "bwrap is not installed" in refused.refusal
    assert (await auto.confine(job(tmp_path, mode="test"), ["entrypoint"], {}, program=None)).refusal is not None
    assert (await auto.confine(job(tmp_path), ["entrypoint"], {}, program="claude")).refusal is not None
    assert (await testing.confine(job(tmp_path), ["entrypoint"], {}, program="aider")).refusal is not None
    assert (await required.confine(job(tmp_path), ["entrypoint"], {}, program="aider")).refusal is not None
    assert "refuses every agent" in await required.describe()


async def test_without_bwrap_aider_runs_unconfined_with_a_warning_line_first(tmp_path: Path) -> None:
    sandbox = AgentSandbox(Settings(), {"PATH": bin_without_bwrap(tmp_path)}, data_root=tmp_path)
    confined = await sandbox.confine(job(tmp_path), ["echo", "entrypoint ran"], {}, program="aider")
    assert confined.refusal is None

    process = await asyncio.create_subprocess_exec(*confined.argv, stdout=asyncio.subprocess.PIPE)
    out, _ = await process.communicate()
    first, second = out.decode().splitlines()
    assert first.startswith("warning: bwrap is not installed: aider runs unconfined")
    assert second == "entrypoint ran"
    assert "Aider runs unconfined" in await sandbox.describe()


async def test_off_and_git_steps_run_the_command_as_it_is(tmp_path: Path) -> None:
    off = AgentSandbox(Settings(agent_sandbox="off"), {"PATH": bin_without_bwrap(tmp_path)}, data_root=tmp_path)
    auto = AgentSandbox(Settings(), {"PATH": PATH}, data_root=tmp_path)
    for sandbox, step in ((off, job(tmp_path)), (off, job(tmp_path, mode="test")), (auto, job(tmp_path, mode="push"))):
        confined = await sandbox.confine(step, ["python", "entrypoint.py"], {"A": "1"}, program="command")
        assert (confined.argv, confined.env, confined.refusal) == (["python", "entrypoint.py"], {"A": "1"}, None)
    assert await off.describe() == "off (AGENT_SANDBOX=off): agents run unconfined"


async def test_the_runner_refuses_a_command_agent_without_bwrap_and_runs_it_when_off(tmp_path: Path) -> None:
    data = tmp_path / "data"
    workspace = make_git_repo(data / "c1" / "ws")
    manager = WorkspaceManager(data)
    environ = {"PATH": bin_without_bwrap(tmp_path), "HOME": str(tmp_path)}
    prepared: list[str] = []

    async def prepare() -> None:
        prepared.append("yes")
        await hand_over(manager, workspace, file_block("a.py", "a = 1"))()

    refused = await LocalRunner(manager, Settings(local_agent_command=SCRIPTED_AGENT), environ=environ).run(
        job(workspace), prepare=prepare)
    assert not refused.success and "apt-get install bubblewrap" in refused.summary
    assert prepared == [] and not (workspace / "a.py").exists()

    ran = await LocalRunner(manager, Settings(local_agent_command=SCRIPTED_AGENT, agent_sandbox="off"),
                            environ=environ).run(job(workspace), prepare=prepare)
    assert ran.success and ran.changed_files == ["a.py"]


# ------------------------------------------------------------------ real agents under real bwrap
async def test_bwrap_works_here() -> None:
    """test.sh installs bubblewrap: every agent test of the suite runs sandboxed."""
    found = await probe(AgentSandbox(Settings(), os.environ, data_root=Path("/")).bwrap)
    assert found.works, found.problem
    assert found.version.startswith("bubblewrap")


async def test_a_sandboxed_agent_writes_its_workspace_and_nothing_else(tmp_path: Path) -> None:
    data, home, service_data = tmp_path / "data", tmp_path / "home", tmp_path / "service-data"
    workspace = make_git_repo(data / "c1" / "ws")
    other = make_git_repo(data / "c2" / "ws")
    home.mkdir()
    (home / "secret.txt").write_text("the service user's secret")
    service_data.mkdir()
    (service_data / "collection-0.wt").write_text("MongoDB's files")
    project_file = REPO / f".sandbox-probe-{uuid.uuid4().hex[:8]}"
    targets = {"outside": str(tmp_path / "outside.txt"), "project": str(project_file),
               "other": str(other / "planted.py"), "home": str(home), "home_secret": str(home / "secret.txt"),
               "service_data": str(service_data / "collection-0.wt"), "data_root": str(data)}
    agent = tmp_path / "escaping_agent.py"
    agent.write_text(ESCAPING_AGENT)
    settings = Settings(local_agent_command=[sys.executable, str(agent)], agent_sandbox="bwrap",
                        agent_sandbox_hide=[str(service_data)], agent_env_passthrough=["PROBE_TARGETS"])
    environ = {"PATH": PATH, "HOME": str(home), "PROBE_TARGETS": json.dumps(targets)}
    manager = WorkspaceManager(data)
    try:
        result = await LocalRunner(manager, settings, environ=environ).run(
            job(workspace), prepare=hand_over(manager, workspace))
    finally:
        escaped_to_project = project_file.exists()
        project_file.unlink(missing_ok=True)

    report = json.loads(result.summary)
    assert report["write_inside"] == "ok" and result.success and result.changed_files == ["inside.txt"]
    assert (workspace / "inside.txt").read_text() == "made in the sandbox\n"
    assert report["write_project"] == "OSError" and not escaped_to_project  # read-only: EROFS
    assert report["write_other_workspace"] == "FileNotFoundError" and not (other / "planted.py").exists()
    assert report["read_home"] == "FileNotFoundError"
    assert report["unmount_home"] != 0 and report["read_home_unmounted"] == "FileNotFoundError"  # no capability
    assert report["read_service_data"] == "FileNotFoundError"
    assert report["data_root_holds"] == ["c1"]  # the other client's workspaces are not there to see
    # /tmp is the sandbox's own: a write there lands in a throwaway tmpfs, never on the host.
    assert not (tmp_path / "outside.txt").exists()


async def test_a_sandboxed_agent_in_a_goal_worktree_still_sees_its_changes_through_git(tmp_path: Path) -> None:
    data = tmp_path / "data"
    main = make_git_repo(data / "c1" / "repo")
    worktree = data / "c1" / "repo.jervis-goals" / "thread-g1"
    git(main, "worktree", "add", "-q", "-b", "jervis/goals/thread-g1", str(worktree))
    manager = WorkspaceManager(data)
    # A file it does not claim: only git's view (which needs the main workspace's .git) reports it.
    agent = ["sh", "-c", f"echo x > unclaimed.txt && exec {' '.join(SCRIPTED_AGENT)}"]
    settings = Settings(local_agent_command=agent, agent_sandbox="bwrap")

    result = await LocalRunner(manager, settings, environ={"PATH": PATH, "HOME": str(tmp_path / "home")}).run(
        job(worktree), prepare=hand_over(manager, worktree, file_block("goal.py", "done = True")))

    assert result.success and result.changed_files == ["goal.py", "unclaimed.txt"]
    assert "goal.py" in git(worktree, "status", "--porcelain")


async def test_a_stopped_sandboxed_agent_writes_its_result_and_leaves_no_process(tmp_path: Path) -> None:
    """SIGTERM to the group reaches the entrypoint (bwrap ignores it), which stops its agent and
    writes its result within the grace; a process the agent moved out of the group dies with the
    sandbox's PID namespace."""
    data = tmp_path / "data"
    workspace = make_git_repo(data / "c1" / "ws")
    marker = f"{300 + uuid.uuid4().int % 1000}.25"  # this test's own `sleep`, to find it in /proc
    agent = ["sh", "-c", f"setsid sleep {marker} >/dev/null 2>&1 & exec {' '.join(SCRIPTED_AGENT)}"]
    manager = WorkspaceManager(data)
    runner = LocalRunner(manager, Settings(local_agent_command=agent, agent_sandbox="bwrap"),
                         environ={"PATH": PATH, "HOME": str(tmp_path / "home")})

    started = time.monotonic()
    result = await runner.run(job(workspace, timeout=3), prepare=hand_over(manager, workspace, "@@SLEEP 60"))
    took = time.monotonic() - started

    assert not result.success and "timed out" in result.summary
    written = json.loads((workspace / ".jervis" / "result.json").read_text())
    assert "stopped by SIGTERM" in written["summary"]
    assert took < 3 + 4  # the entrypoint ended at SIGTERM, no SIGKILL 5 s later
    await asyncio.sleep(0.2)
    assert _pids_running("sleep", marker) == [], "a process outlived the sandbox"


def _pids_running(*argv: str) -> list[int]:
    found, wanted = [], [arg.encode() for arg in argv]
    for entry in Path("/proc").iterdir():
        try:
            if (entry.name.isdigit() and (entry / "cmdline").read_bytes().split(b"\0")[:-1] == wanted
                    and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found



CONFIGURING_AGENT = '''
import json, subprocess
from pathlib import Path
subprocess.run(["git", "config", "filter.x.clean", "touch /tmp/ran-as-the-service"], check=True)
Path(".gitattributes").write_text("* filter=x\\n")
Path(".jervis/result.json").write_text(json.dumps({"success": True, "summary": "configured git"}))
'''


async def test_a_git_configuration_the_agent_planted_is_put_back_and_fails_the_step(tmp_path: Path) -> None:
    """Unconfined (AGENT_SANDBOX=off, or Aider without bubblewrap) the agent may write `.git/` (the
    sandbox binds it read-only: tests/security/test_git_sandbox.py), but the service's git runs
    outside: a filter it configured would run as the service at the next `git add`."""
    data = tmp_path / "data"
    workspace = make_git_repo(data / "c1" / "ws")
    before = (workspace / ".git" / "config").read_bytes()
    agent = tmp_path / "configuring_agent.py"
    agent.write_text(CONFIGURING_AGENT)
    manager = WorkspaceManager(data)
    runner = LocalRunner(manager, Settings(local_agent_command=[sys.executable, str(agent)], agent_sandbox="off"),
                         environ={"PATH": PATH, "HOME": str(tmp_path / "home")})

    result = await runner.run(job(workspace), prepare=hand_over(manager, workspace))

    assert not result.success
    assert result.summary.startswith("The agent changed the repository's git configuration (.git/config)")
    assert (workspace / ".git" / "config").read_bytes() == before
    assert "filter.x.clean" not in git(workspace, "config", "--list")
