"""git_operations (spec §7.11, §13): commit, then push, each behind the user's approval.

Git runs as a git-mode step of the agent entrypoint (`ALLOW_GIT=true`): in Kubernetes a Job of
the git agent's image, which holds the repository credentials the orchestrator does not. The
node re-runs from its start after every resume, so everything before an `interrupt()` is
read-only, and the commit is idempotent (the entrypoint finds it again by its trailer).
"""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path
from typing import Any, Literal

from langgraph.types import interrupt

from app.agents.base import AgentJob, AgentResult
from app.agents.workspace import StepBrief
from app.graph.approval import is_approved
from app.graph.nodes._common import NodeRuntime, changed_files, emit, task_of
from app.graph.nodes.execute_step import kb_env, task_brief
from app.graph.state import OrchestratorState

GIT_TIMEOUT_SECONDS = 300


def branch_name(rules: dict[str, Any], task_id: str) -> str:
    return rules.get("branch_naming", "task/{taskId}").replace("{taskId}", task_id)


def commit_message(rules: dict[str, Any], task_id: str, title: str) -> str:
    prefix = rules.get("commit_prefix", "task({taskId}):").replace("{taskId}", task_id)
    return f"{prefix} {title}".strip()[:200]


async def run_git(state: OrchestratorState, runtime: NodeRuntime, workspace: Path,
                  action: Literal["commit", "push"], plan: dict[str, Any]) -> AgentResult:
    ctx = runtime.context
    task = task_of(state)
    agent = ctx.settings.git_agent
    brief = StepBrief(agent_type=agent, instructions=f"Git {action}: see .jervis/git.json", task=task_brief(state, 0, 0),
                      title=f"git {action}", kb_env=kb_env(ctx.settings, task), git_plan={"action": action, **plan})
    job = AgentJob(thread_id=state.get("thread_id", ""), task_id=task["id"], client_id=task["client_id"],
                   project_id=task.get("project_id"), agent_type=agent, workspace=workspace, mode=action,
                   timeout_seconds=GIT_TIMEOUT_SECONDS)
    try:
        return await ctx.runner.run(job, prepare=lambda: ctx.workspaces.prepare(workspace, brief),
                                    on_log=lambda line: emit({"type": "agent_log", "agent": f"git-{action}",
                                                              "line": line}))
    finally:
        ctx.workspaces.cleanup(workspace)


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
    workspace = runtime.context.workspaces.resolve(task["workspace_path"])
    if not (workspace / ".git").exists():
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
    committed = await run_git(state, runtime, workspace, "commit", {
        "branch": branch, "message": commit_message(rules, task["id"], title), "files": files,
        "trailer": f"Jervis-Thread: {state.get('thread_id', task['id'])}",
    })
    if not committed.success:
        return {"artifacts": files, "git_outcome": "commit_failed", "error": f"Commit selhal: {committed.summary}"}
    result: dict[str, Any] = {"branch": branch, "commit_sha": committed.commit_sha, "artifacts": files,
                              "git_outcome": "committed"}
    if not rules.get("auto_push", False):
        return result
    if rules.get("require_approval_push", True) and not user_approves(
        "push", f"Push větve '{branch}' na vzdálený repozitář"
    ):
        return result | {"git_outcome": "push_rejected"}
    pushed = await run_git(state, runtime, workspace, "push", {"branch": branch, "remote": "origin"})
    if not pushed.success:
        return result | {"git_outcome": "push_failed", "error": f"Push selhal: {pushed.summary}"}
    return result | {"git_outcome": "pushed"}
