"""A hostile agent inside its Kubernetes Job: it reaches nothing of the data volume but its workspace.

The real KubernetesJobRunner builds and creates the step's Job against the fake API server, whose
kubelet mounts the data volume's claim as a real one would (``volume_roots``: bubblewrap shows the
pod only its mounts of the claim's folder, each ``subPath`` at its ``mountPath``, read-only where
the Job says so). The container's program is replaced by a hostile one, as a prompt-injected agent
would behave: it reads another client's workspace and the service's state, lists the volume, plants
a file in the service's state and rewrites its workspace's git configuration and hooks (which the
service's own git would run: issue 40, item 2). On main the Job mounts the whole volume read-write,
and each of these succeeds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from app.agents.base import AgentJob
from app.agents.job_spec import job_name
from app.agents.k8s_client import KubernetesApi, load_api_client
from app.agents.kubernetes import KubernetesJobRunner
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from tests.support import git, make_git_repo

NAMESPACE = "jervis"
CLAIM = "jervis-data-pvc"
OTHER_SECRET = "other client's deploy key"
STATE_SECRET = "the service's own state"

#: The hostile agent: tries everything, writes down what worked, in its own workspace (which it may write).
HOSTILE = r"""
import json, os, sys
root, other, state = sys.argv[1], sys.argv[2], sys.argv[3]
seen = {}
def attempt(name, action):
    try:
        seen[name] = action()
    except OSError as exc:
        seen[name] = "refused: " + type(exc).__name__
attempt("other_client", lambda: open(other).read())
attempt("service_state", lambda: open(state).read())
attempt("volume_listing", lambda: sorted(os.listdir(root)))
attempt("plant_state", lambda: open(os.path.join(os.path.dirname(state), "planted"), "w").write("x"))
def rewrite_git_config():
    with open(".git/config", "a") as f:
        f.write('[filter "x"]\n\tclean = touch /tmp/pwned\n[core]\n\thooksPath = /tmp\n')
    return "written"
attempt("git_config", rewrite_git_config)
def plant_hook():
    path = ".git/hooks/pre-commit"
    with open(path, "w") as f:
        f.write("#!/bin/sh\ntouch /tmp/pwned\n")
    return "written"
attempt("git_hook", plant_hook)
def redirect_git():
    with open(".git", "w") as f:  # a linked worktree's `.git` file: point it at a git dir of the agent's own
        f.write("gitdir: /tmp/elsewhere\n")
    return "written"
if os.path.isfile(".git"):
    attempt("git_pointer", redirect_git)
with open("hostile-report.json", "w") as f:
    json.dump(seen, f)
print("hostile agent done")
"""


@pytest.fixture
def volume(tmp_path: Path) -> Path:
    """DATA_ROOT: two clients' workspaces and the service's own state, as on the shared volume."""
    root = tmp_path / "data"
    make_git_repo(root / "clients" / "a" / "shop")
    other = root / "clients" / "b" / "bank"
    make_git_repo(other)
    (other / "deploy_key").write_text(OTHER_SECRET)
    (root / ".orchestrator").mkdir()
    (root / ".orchestrator" / "runs.json").write_text(STATE_SECRET)
    return root


async def run_hostile(k8s: Any, volume: Path, tmp_path: Path, workspace: Path, mode: str) -> dict[str, Any]:
    """The step's Job as the real runner makes it, its program the hostile one; what it managed."""
    k8s.configure(image_commands={"*": [sys.executable, "-c", HOSTILE, str(volume),
                                        str(volume / "clients" / "b" / "bank" / "deploy_key"),
                                        str(volume / ".orchestrator" / "runs.json")]},
                  volume_roots={CLAIM: str(volume)})
    settings = Settings(data_root=volume, k8s_namespace=NAMESPACE, pvc_claim_name=CLAIM, k8s_poll_seconds=0.3)
    api = KubernetesApi(load_api_client(str(k8s.kubeconfig(tmp_path / "kubeconfig"))), NAMESPACE)
    runner = KubernetesJobRunner(api, WorkspaceManager(volume), settings)
    job = AgentJob(thread_id=f"thread-hostile-{mode}", task_id="hostile", client_id="a", agent_type="aider",
                   workspace=workspace, mode=mode, timeout_seconds=60)  # type: ignore[arg-type]

    async def prepare() -> None:
        WorkspaceManager(volume).prepare(workspace, StepBrief(agent_type="aider", instructions="x", task={}))

    lines: list[str] = []
    await runner.run(job, prepare=prepare, on_log=lines.append)
    assert "hostile agent done" in lines, f"the hostile program did not run to its end: {lines}"
    assert job_name(job) in k8s.jobs(NAMESPACE)
    report: dict[str, Any] = json.loads((workspace / "hostile-report.json").read_text())
    return report


def assert_reached_nothing_outside(report: dict[str, Any], volume: Path) -> None:
    assert str(report["other_client"]).startswith("refused"), report
    assert str(report["service_state"]).startswith("refused"), report
    assert str(report["plant_state"]).startswith("refused"), report
    assert not (volume / ".orchestrator" / "planted").exists()
    # The volume's root holds only the way down to the workspace (the mount point's parents).
    assert report["volume_listing"] == ["clients"], report
    assert OTHER_SECRET not in json.dumps(report) and STATE_SECRET not in json.dumps(report)


@pytest.mark.parametrize("mode", ["agent", "test"])
async def test_an_agent_job_reaches_only_its_own_workspace(k8s: Any, volume: Path, tmp_path: Path,
                                                          mode: str) -> None:
    workspace = volume / "clients" / "a" / "shop"
    config_before = (workspace / ".git" / "config").read_text()
    report = await run_hostile(k8s, volume, tmp_path, workspace, mode)
    assert_reached_nothing_outside(report, volume)
    # Its git directory is there to read, but is not the agent's to change.
    assert str(report["git_config"]).startswith("refused") and str(report["git_hook"]).startswith("refused"), report
    assert (workspace / ".git" / "config").read_text() == config_before
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()


async def test_a_goals_worktree_job_sees_its_worktree_and_the_main_git_read_only(k8s: Any, volume: Path,
                                                                                 tmp_path: Path) -> None:
    """A goal of a wave works in `<main>.jervis-goals/<goal>`: it needs the main workspace's `.git`
    (read-only), and nothing else of the main workspace or the volume."""
    main = volume / "clients" / "a" / "shop"
    (main / "wip.py").write_text("main workspace's uncommitted work\n")
    worktree = main.parent / "shop.jervis-goals" / "thread-g1"
    git(main, "worktree", "add", "-q", "-b", "goal-1", str(worktree))
    pointer = (worktree / ".git").read_text()
    config_before = (main / ".git" / "config").read_text()
    report = await run_hostile(k8s, volume, tmp_path, worktree, "agent")
    assert_reached_nothing_outside(report, volume)
    assert str(report["git_config"]).startswith("refused") and str(report["git_pointer"]).startswith("refused"), report
    assert (worktree / ".git").read_text() == pointer and (main / ".git" / "config").read_text() == config_before
    assert not (main / ".git" / "hooks" / "pre-commit").exists()


async def test_the_git_job_alone_may_write_its_git_directory(k8s: Any, volume: Path, tmp_path: Path) -> None:
    """Committing and pushing write `.git`: the git Job (the entrypoint's git mode, no model) gets it
    read-write, still without anything else of the volume."""
    workspace = volume / "clients" / "a" / "shop"
    report = await run_hostile(k8s, volume, tmp_path, workspace, "commit")
    assert_reached_nothing_outside(report, volume)
    assert report["git_config"] == "written", report


async def test_a_git_link_planted_by_an_earlier_step_mounts_nothing_else(k8s: Any, volume: Path,
                                                                         tmp_path: Path) -> None:
    """An agent of an earlier step replaced its `.git` by a link to another client's workspace: the
    next step's Job must not mount what the link points at (a kubelet follows a `subPath` link
    anywhere inside the volume)."""
    workspace = volume / "clients" / "a" / "shop"
    git_dir = workspace / ".git"
    git_dir.rename(tmp_path / "shop.git")
    git_dir.symlink_to(Path("..") / ".." / "b" / "bank")
    report = await run_hostile(k8s, volume, tmp_path, workspace, "agent")
    assert_reached_nothing_outside(report, volume)
    assert str(report["git_config"]).startswith("refused"), report
    assert not (volume / "clients" / "b" / "bank" / ".git" / "config").read_text().count("pwned")
