"""The hostile agent inside the real sandbox (a LocalRunner with LOCAL_AGENT_COMMAND, real bwrap):
it cannot write anything under the workspace's `.git` (nor a goal worktree's `.git` file or its
git directory), while git still reads; and run unconfined (AGENT_SANDBOX=off), what it planted in
the git metadata is put back by the guard, which names it and does not break on a `.git` replaced
by a `gitdir:` file."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from app.agents.base import AgentJob
from app.agents.local import LocalRunner
from app.agents.safe_git import UnsafeRepositoryError
from app.agents.snapshots import WorkspaceSnapshots
from app.agents.workspace import StepBrief, WorkspaceManager
from app.agents.worktrees import WORKTREES_SUFFIX, GoalWorktrees
from app.config import Settings
from tests.support import git, make_git_repo

PATH = os.environ["PATH"]

#: Tries every write under the git metadata a redirect or a planted program needs; reports each
#: outcome (`ok`, or the error) and whether git still reads, as its summary.
GIT_WRITING_AGENT = r'''
import json, os, shutil, subprocess
from pathlib import Path
git_dir = Path(@GIT_DIR@)
def attempt(action):
    try:
        action()
        return "ok"
    except OSError as exc:
        return type(exc).__name__
def git(*args):
    return subprocess.run(["git", *args], capture_output=True, text=True).returncode
report = {
    "commondir": attempt(lambda: (git_dir / "commondir").write_text("/tmp/agent-git\n")),
    "config": attempt(lambda: (git_dir / "config").open("a").write("[filter \"x\"]\n\tclean = touch /tmp/x\n")),
    "git_config": git("config", "--local", "filter.x.clean", "touch /tmp/x"),
    "hook": attempt(lambda: (git_dir / "hooks" / "pre-commit").write_text("#!/bin/sh\ntouch /tmp/x\n")),
    "attributes": attempt(lambda: (git_dir / "info" / "attributes").write_text("* filter=x\n")),
    "alternates": attempt(lambda: (git_dir / "objects" / "info" / "alternates").write_text("/tmp/objects\n")),
    "new_file": attempt(lambda: (git_dir / "planted").write_text("x")),
    "rename_git": attempt(lambda: os.rename(".git", ".git-away")),
    "replace_git": attempt(lambda: shutil.rmtree(".git")),
    "gitdir_file": attempt(lambda: Path(".git").write_text("gitdir: /tmp/agent-git\n")),
    "git_reads": [git("status", "--porcelain"), git("log", "-1"), git("diff", "HEAD")],
    "work_tree": attempt(lambda: Path("made-in-the-sandbox.txt").write_text("fine\n")),
}
Path(".jervis/result.json").write_text(json.dumps({"success": True, "summary": json.dumps(report)}))
'''

#: Unconfined: plants a redirect, a hook, attributes and alternates, then swaps `.git` for a `gitdir:` file.
PLANTING_AGENT = r'''
import json, os
from pathlib import Path
git_dir = Path(".git")
(git_dir / "commondir").write_text("/tmp/agent-git\n")
(git_dir / "hooks" / "pre-commit").write_text("#!/bin/sh\ntouch /tmp/x\n")
(git_dir / "hooks" / "pre-push.sample").write_text("#!/bin/sh\ntouch /tmp/x\n")
(git_dir / "info" / "attributes").write_text("* filter=x\n")
(git_dir / "objects" / "info" / "alternates").write_text("/tmp/objects\n")
if @REPLACE@:
    os.rename(".git", ".git-away")
    Path(".git").write_text("gitdir: .git-away\n")
Path(".jervis/result.json").write_text(json.dumps({"success": True, "summary": "planted"}))
'''


def job(workspace: Path) -> AgentJob:
    return AgentJob(thread_id="thread-t1-abcd", task_id="t1", client_id="c1", agent_type="command",
                    workspace=workspace, timeout_seconds=30)


async def run_agent(tmp_path: Path, workspace: Path, script: str, sandbox: str, **values: object) -> tuple[bool, str]:
    """The script, its `@NAME@`s replaced by the Python literals of `values`, as the step's agent."""
    agent = tmp_path / "agent.py"
    for name, value in values.items():
        script = script.replace(f"@{name}@", repr(value))
    agent.write_text(script)
    manager = WorkspaceManager(tmp_path / "data")
    runner = LocalRunner(manager, Settings(local_agent_command=[sys.executable, str(agent)], agent_sandbox=sandbox),
                         environ={"PATH": PATH, "HOME": str(tmp_path / "home")})

    async def prepare() -> None:
        manager.prepare(workspace, StepBrief(agent_type="command", instructions="go", task={"id": "t1"}))

    result = await runner.run(job(workspace), prepare=prepare)
    return result.success, result.summary


def tree_of(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` with its bytes (what the agent may not change)."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


async def test_inside_the_sandbox_nothing_under_dot_git_can_be_written_and_git_still_reads(tmp_path: Path) -> None:
    workspace = make_git_repo(tmp_path / "data" / "c1" / "ws")
    (tmp_path / "home").mkdir()
    before = tree_of(workspace / ".git")

    ok, summary = await run_agent(tmp_path, workspace, GIT_WRITING_AGENT, "bwrap",
                                  GIT_DIR=str(workspace / ".git"))

    report = json.loads(summary)
    attempts = {key: value for key, value in report.items() if key not in ("git_reads", "work_tree", "git_config")}
    assert all(outcome != "ok" for outcome in attempts.values()), report
    assert report["git_config"] != 0, report
    assert report["git_reads"] == [0, 0, 0] and report["work_tree"] == "ok", report
    assert ok
    after = tree_of(workspace / ".git")
    changed = {name for name in set(before) | set(after) if before.get(name) != after.get(name)}
    assert changed <= {"info/exclude"}, changed  # the service's own hand-over rule, written before the agent ran


async def test_inside_the_sandbox_a_goal_worktree_cannot_repoint_or_write_its_git_metadata(tmp_path: Path) -> None:
    main = make_git_repo(tmp_path / "data" / "c1" / "ws")
    (tmp_path / "home").mkdir()
    worktrees = GoalWorktrees()
    worktree = main.parent / f"ws{WORKTREES_SUFFIX}" / "g1"
    await worktrees.create(main, worktree, "jervis/goals/g1",
                           await worktrees.base_commit(main, await WorkspaceSnapshots().current_tree(main)))
    private = main / ".git" / "worktrees" / "g1"
    pointer = (worktree / ".git").read_bytes()

    ok, summary = await run_agent(tmp_path, worktree, GIT_WRITING_AGENT, "bwrap", GIT_DIR=str(private))

    report = json.loads(summary)
    attempts = {key: value for key, value in report.items() if key not in ("git_reads", "work_tree", "git_config")}
    assert all(outcome != "ok" for outcome in attempts.values()), report
    assert report["git_reads"] == [0, 0, 0] and report["work_tree"] == "ok" and ok, report
    assert (worktree / ".git").read_bytes() == pointer and not (main / ".git" / "commondir").exists()
    assert await WorkspaceSnapshots().current_tree(worktree)  # the service's git still finds it as it made it


@pytest.mark.parametrize("replace", [False, True], ids=["planted", "gitdir-file"])
async def test_unconfined_the_guard_puts_back_what_the_agent_planted_and_says_so(tmp_path: Path,
                                                                                  replace: bool) -> None:
    """AGENT_SANDBOX=off (or Aider without bubblewrap): the guard is what is left locally."""
    workspace = make_git_repo(tmp_path / "data" / "c1" / "ws")
    (tmp_path / "home").mkdir()

    ok, summary = await run_agent(tmp_path, workspace, PLANTING_AGENT, "off", REPLACE=replace)

    assert not ok
    assert summary.startswith("The agent changed the repository's git configuration")
    if replace:  # the directory is gone: reported, and the service's git then refuses the repository
        assert ".git (replaced; not put back)" in summary
        with pytest.raises(UnsafeRepositoryError, match="'gitdir:' file"):
            await WorkspaceSnapshots().current_tree(workspace)
        return
    for planted in (".git/commondir", ".git/hooks/pre-commit", ".git/hooks/pre-push.sample", ".git/info/attributes",
                    ".git/objects/info/alternates"):
        assert planted in summary
        assert not (workspace / planted).exists()
    assert git(workspace, "status", "--porcelain") is not None
