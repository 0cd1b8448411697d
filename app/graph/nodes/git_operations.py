"""git_operations (spec §7.11, §13): commit, then push, each behind the user's approval.

The node re-runs from its start after every resume, so everything before an `interrupt()` is
read-only, and the commit is idempotent (found again by its `Jervis-Thread:` trailer).
"""

from __future__ import annotations

from fnmatch import fnmatch
from typing import Any

from langgraph.types import interrupt

from app.agents.git import GitError, GitWorkspace
from app.graph.approval import is_approved
from app.graph.nodes._common import NodeRuntime, changed_files, task_of
from app.graph.state import OrchestratorState


def branch_name(rules: dict[str, Any], task_id: str) -> str:
    return rules.get("branch_naming", "task/{taskId}").replace("{taskId}", task_id)


def commit_message(rules: dict[str, Any], task_id: str, title: str) -> str:
    prefix = rules.get("commit_prefix", "task({taskId}):").replace("{taskId}", task_id)
    return f"{prefix} {title}".strip()[:200]


async def git_operations(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    task = task_of(state)
    rules = state.get("rules", {})
    files = changed_files(state)
    if not files:
        return {"branch": None, "git_outcome": "no_changes", "artifacts": []}
    branch = branch_name(rules, task["id"])
    allowed = rules.get("allowed_branches") or []
    if allowed and not any(fnmatch(branch, pattern) for pattern in allowed):
        return {"artifacts": files, "git_outcome": "branch_not_allowed",
                "error": f"Větev '{branch}' neodpovídá povoleným vzorům {allowed}; změny nebyly commitnuty."}
    git = GitWorkspace(runtime.context.workspaces.resolve(task["workspace_path"]))
    if not await git.is_repo():
        return {"artifacts": files, "git_outcome": "not_a_repo"}

    def user_approves(action: str, description: str) -> bool:
        return is_approved(interrupt({
            "type": "approval_request", "action": action, "description": description,
            "task_id": task["id"], "branch": branch, "changed_files": files,
        }))

    if rules.get("require_approval_commit", True) and not user_approves(
        "commit", f"Commit {len(files)} změněných souborů do větve '{branch}'"
    ):
        return {"branch": None, "artifacts": files, "git_outcome": "commit_rejected"}
    title = (state.get("goals") or [{}])[0].get("title") or task["query"][:72]
    try:
        await git.checkout_branch(branch)
        sha = await git.commit(files, commit_message(rules, task["id"], title),
                               trailer=f"Jervis-Thread: {state.get('thread_id', task['id'])}")
    except GitError as exc:
        return {"artifacts": files, "git_outcome": "commit_failed", "error": f"Commit selhal: {exc}"}
    result: dict[str, Any] = {"branch": branch, "commit_sha": sha, "artifacts": files, "git_outcome": "committed"}
    if not rules.get("auto_push", False):
        return result
    if rules.get("require_approval_push", True) and not user_approves(
        "push", f"Push větve '{branch}' na vzdálený repozitář"
    ):
        return result | {"git_outcome": "push_rejected"}
    try:
        await git.push(branch)
    except GitError as exc:
        return result | {"git_outcome": "push_failed", "error": f"Push selhal: {exc}"}
    return result | {"git_outcome": "pushed"}
