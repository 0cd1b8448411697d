"""Git mode: commit (one commit, or a series through `commit_series`) or push; a git failure is a
failed step (exit 1) with git's own message, never a crash. Nothing runs on a repository
`safe_git.check_repository` refuses (the step fails saying why)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .commit_series import commit_series
from .common import SUMMARY_LIMIT
from .config import Config
from .git import GitError, find_commit, git_ok, identity_args, switch_branch
from .git_plan import GitPlan
from .safe_git import UnsafeRepositoryError, check_repository

PUSH_TIMEOUT = 600.0


def run_git_mode(config: Config, plan: GitPlan) -> dict[str, Any]:
    """Commit or push; a git failure is a failed step (exit 1), not a crash."""
    try:
        check_repository(config.workspace)
        if plan.action == "commit":
            return commit_series(config.workspace, plan) if plan.commits else commit(config.workspace, plan)
        return push(config.workspace, plan)
    except (GitError, UnsafeRepositoryError) as exc:
        refused = "Refused: " if isinstance(exc, UnsafeRepositoryError) else ""
        result: dict[str, Any] = {"success": False, "summary": f"{refused}{exc}"[:SUMMARY_LIMIT]}
        if plan.action == "commit":
            result.update(changedFiles=plan.changed_files, commitSha=None)
            if plan.commits:
                result["commits"] = []
        return result


def commit(workspace: Path, plan: GitPlan) -> dict[str, Any]:
    """Commit exactly the listed files once per trailer: a re-run reports the earlier commit."""
    if not plan.files:
        return {"success": False, "summary": "No files to commit", "changedFiles": [], "commitSha": None}
    switch_branch(workspace, plan.branch)
    existing = find_commit(workspace, plan.trailer)
    if existing is not None:
        return {"success": True, "summary": f"Already committed as {existing[:12]} on {plan.branch}",
                "changedFiles": plan.files, "commitSha": existing}
    git_ok(workspace, "add", "-A", "--", *plan.files)
    git_ok(workspace, *identity_args(workspace), "commit", "-m", f"{plan.message}\n\n{plan.trailer}",
           "--", *plan.files)
    sha = git_ok(workspace, "rev-parse", "HEAD").strip()
    return {"success": True, "summary": f"Committed {len(plan.files)} file(s) as {sha[:12]} on {plan.branch}",
            "changedFiles": plan.files, "commitSha": sha}


def push(workspace: Path, plan: GitPlan) -> dict[str, Any]:
    """Push the branch to its namesake on the remote; never forced."""
    remotes = git_ok(workspace, "remote").split()
    if plan.remote not in remotes:
        return {"success": False, "summary": f"No git remote '{plan.remote}' is configured"}
    git_ok(workspace, "push", plan.remote, f"{plan.branch}:{plan.branch}", timeout=PUSH_TIMEOUT)
    return {"success": True, "summary": f"Pushed {plan.branch} to {plan.remote}"}
