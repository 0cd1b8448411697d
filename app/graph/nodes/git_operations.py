"""git_operations (spec §7.11, §13): commit, then push, each behind the user's approval.

Git runs as a git-mode step of the agent entrypoint (`ALLOW_GIT=true`): in Kubernetes a Job of
the git agent's image, which holds the repository credentials the orchestrator does not. The
node re-runs from its start after every resume, so everything before an `interrupt()` is
read-only, and the commit is idempotent (the entrypoint finds it again by its trailer).

A run that gives up (`halt`) still comes here: finished work is offered for commit before the
run ends with its error, so it is never stranded. The commit answer may carry a condition:
a branch rule ("ano, ale ne do mastera", "ano, do větve fix/x"), more work ("ano, ale přidej
testy": one more step runs, then the commit happens without asking again), or a note.
"""

from __future__ import annotations

import re
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, Literal

from langgraph.types import interrupt

from app.agents.base import AgentJob, AgentResult
from app.agents.confinement import WorkspaceEscapeError
from app.agents.control import should_detach
from app.agents.workspace import StepBrief
from app.graph.agent_handover import kb_env, number_steps, task_brief
from app.graph.rules import step_changes
from app.graph.rules.approval import Modification, classify_modification
from app.graph.rules.report import changed_files
from app.graph.run_state import (
    NodeRuntime,
    cloud_allowed,
    current_goal,
    current_thread_id,
    emit,
    reset_step_counters,
    run_language,
    task_of,
)
from app.graph.state import OrchestratorState
from app.graph.state_access import Attempts, Position, Setbacks, UserTerms, Waves, WorkDone, rules_of
from app.graph.state_parts import Rules
from app.graph.user_answers import read_approval
from app.schemas.domain import CodingStep, StepType
from app.texts import Texts, texts
from app.texts.clip import clip

GIT_TIMEOUT_SECONDS = 300


def branch_name(rules: Rules, task_id: str) -> str:
    naming: str = rules.get("branch_naming", "task/{taskId}")
    return naming.replace("{taskId}", task_id)


def commit_message(rules: Rules, task_id: str, title: str) -> str:
    prefix = rules.get("commit_prefix", "task({taskId}):").replace("{taskId}", task_id)
    return f"{prefix} {title}".strip()[:200]


#: Markdown a title must not carry: heading marks, list bullets, emphasis and code quotes.
_MARKUP = re.compile(r"^\s*(?:#{1,6}|[-*+>]|\d+[.)])\s+|[*_`]+")
TITLE_CHARS = 72


def commit_title(title: str | None, query: str, files: list[str]) -> str:
    """What the commit changed, in one line: the goal's title or the request's first line that says
    something (a heading like "# Instructions" does not), else the files it changed."""
    for candidate in (title or "", *query.splitlines()):
        line = " ".join(_MARKUP.sub("", candidate).split()).rstrip(":")
        if len(line.split()) >= 2:
            return clip(line, TITLE_CHARS)
    shown = ", ".join(files[:3]) + (" …" if len(files) > 3 else "")
    return f"Update {shown}" if files else clip(" ".join(query.split()), TITLE_CHARS)


def branch_allowed(branch: str, rules: Rules) -> bool:
    allowed = rules.get("allowed_branches") or []
    return not allowed or any(fnmatch(branch, pattern) for pattern in allowed)


def apply_branch_rule(branch: str, rule: Modification, rules: Rules, task_id: str,
                      t: Texts) -> tuple[str, str | None]:
    """The branch after the user's rule, and a warning (for the report) when the rule could not be followed."""
    if rule.target_branch:
        if branch_allowed(rule.target_branch, rules):
            return rule.target_branch, None
        return branch, t.warning_branch_not_allowed.format(branch=rule.target_branch, used=branch)
    forbidden = rule.forbidden_branch or ""
    if forbidden and (branch == forbidden or fnmatch(branch, forbidden)):
        for candidate in (f"task/{task_id}", f"jervis/{task_id}"):
            if candidate != forbidden and branch_allowed(candidate, rules):
                return candidate, None
        return branch, t.warning_no_other_branch.format(branch=forbidden)
    return branch, None


def goal_files(state: OrchestratorState) -> list[str]:
    """One line per finished goal: its title and the files it changed."""
    return [f"{n}. {clip(s['title'], 80)}: {', '.join(s.get('changed_files', [])) or '-'}"
            for n, s in enumerate(WorkDone.of(state).goal_summaries or [], 1)]


def commit_plan(state: OrchestratorState, branch: str, files: list[str]) -> dict[str, Any]:
    """`.jervis/git.json` of the commit: one commit titled by the task's goal, or for a plan of
    several goals one per finished goal in the order they were done, each with the goal's files as
    the goal left them (its recorded tree), the last one with the run's files as they are now."""
    task, rules = task_of(state), rules_of(state)
    trailer = f"Jervis-Thread: {current_thread_id() or task['id']}"
    goals = Position.of(state).goals
    title = commit_title(goals[0].get("title") if goals else None, task["query"], files)
    plan: dict[str, Any] = {"branch": branch, "message": commit_message(rules, task["id"], title), "files": files,
                            "trailer": trailer}
    drafted = Waves.of(state).design
    commits = [{"message": commit_message(rules, task["id"], f"Design: {Path(drafted['path']).stem}"),
                "trailer": f"{trailer} design", "files": [drafted["path"]], "tree": drafted.get("tree")}
               ] if drafted and drafted.get("tree") else []
    commits += [{"message": commit_message(rules, task["id"], commit_title(s["title"], "", s["changed_files"])),
                 "trailer": f"{trailer} goal {s['goal_id']}",
                 "files": s["changed_files"], "tree": s.get("tree")}
                for s in WorkDone.of(state).goal_summaries or [] if s.get("changed_files")]
    if len(commits) < 2:
        return plan
    commits[-1] |= {"files": files, "tree": None}  # the end of the run, steps added at the commit gate included
    return plan | {"commits": commits}


async def run_git(state: OrchestratorState, runtime: NodeRuntime, workspace: Path,
                  action: Literal["commit", "push"], plan: dict[str, Any]) -> AgentResult:
    ctx = runtime.context
    task = task_of(state)
    agent = ctx.settings.git_agent
    brief = StepBrief(agent_type=agent, instructions=f"Git {action}: see .jervis/git.json",
                      task=task_brief(state, 0, 0), title=f"git {action}", kb_env=kb_env(ctx.settings, task),
                      git_plan={"action": action, **plan})
    job = AgentJob(thread_id=current_thread_id(), task_id=task["id"], client_id=task["client_id"],
                   project_id=task.get("project_id"), agent_type=agent, workspace=workspace, mode=action,
                   timeout_seconds=GIT_TIMEOUT_SECONDS)

    async def prepare() -> None:
        await ctx.workspaces.check_links(workspace)
        ctx.workspaces.prepare(workspace, brief)

    try:
        return await ctx.runner.run(job, prepare=prepare,
                                    on_log=lambda line: emit({"type": "agent_log", "agent": f"git-{action}",
                                                              "line": line}))
    except WorkspaceEscapeError as exc:  # nothing is committed from a workspace that leads outside itself
        return AgentResult(success=False, summary=str(exc))
    finally:
        if not should_detach():  # a suspended run's agent still reads and writes .jervis/
            ctx.workspaces.cleanup(workspace)


def added_step(state: OrchestratorState, runtime: NodeRuntime, text: str, branch: str) -> dict[str, Any]:
    """"ano, ale přidej testy": the commit is approved once one more step of the last goal is done."""
    steps = list(Position.of(state).steps or [])
    goal = current_goal(state)
    step = CodingStep(instructions=text, step_type=StepType.CODE)
    new = number_steps([step], complexity=goal.get("complexity"),
                       preference=task_of(state).get("agent_preference", "auto"),
                       mapping=runtime.context.settings.agent_selection,
                       cloud_allowed=cloud_allowed(state), start=len(steps),
                       revision=Attempts.of(state).replans)
    return {"commit_approval": {"approved": True, "modification": text, "branch": branch},
            "steps": steps + new, "current_step_index": len(steps), "user_conditions": [text],
            **reset_step_counters()}


async def git_operations(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    task = task_of(state)
    rules = rules_of(state)
    t = texts(run_language(state, ctx.settings))
    files = changed_files(state)
    if not files:
        return {"branch": None, "git_outcome": "no_changes", "artifacts": []}
    halt = Setbacks.of(state).halt
    approved_before = None if halt else UserTerms.of(state).commit_approval
    # An approval with more work carries the branch it named (always set where it is made).
    branch = (approved_before.get("branch") if approved_before else None) or branch_name(rules, task["id"])
    if not branch_allowed(branch, rules):
        return {"artifacts": files, "git_outcome": "branch_not_allowed",
                "error": t.git_branch_not_allowed.format(branch=branch, allowed=rules.get("allowed_branches"))}
    workspace = ctx.workspaces.existing(task["workspace_path"])  # gone since the step: the run ends, naming it
    if not (workspace / ".git").exists():
        return {"artifacts": files, "git_outcome": "not_a_repo"}
    updates: dict[str, Any] = {"commit_approval": None}
    if approved_before is None and rules.get("require_approval_commit", True):
        description = (t.commit_gate_partial.format(problem=clip(halt["message"], 300), count=len(files),
                                                    branch=branch)
                       if halt else t.commit_gate.format(count=len(files), branch=branch))
        if len(WorkDone.of(state).goal_summaries or []) > 1:  # an epic: what each goal changed, and the whole diff stat
            base = step_changes.run_base(WorkDone.of(state).step_results)
            stat = await step_changes.diff(ctx.snapshots, workspace, base, stat=True)
            description = "\n".join([description, *goal_files(state), *([stat.rstrip()] if stat else [])])
        answer = await read_approval(ctx.llm, interrupt({
            "type": "approval_request", "action": "commit", "description": description,
            "task_id": task["id"], "branch": branch, "changed_files": files,
        }), question=description)
        if not answer.approved:
            return {"branch": None, "artifacts": files, "git_outcome": "commit_rejected"}
        if answer.modification:
            branch, more = _condition(state, runtime, answer.modification, branch, halted=halt is not None)
            if "steps" in more:
                return more
            updates |= more
    committed = await run_git(state, runtime, workspace, "commit", commit_plan(state, branch, files))
    if not committed.success:
        return updates | {"artifacts": files, "git_outcome": "commit_failed",
                          "error": t.git_commit_failed.format(reason=committed.summary)}
    result: dict[str, Any] = updates | {"branch": branch, "commit_sha": committed.commit_sha, "artifacts": files,
                                        "git_outcome": "committed"}
    if not rules.get("auto_push", False):
        return result
    if rules.get("require_approval_push", True):
        description = t.push_gate.format(branch=branch)
        answer = await read_approval(ctx.llm, interrupt({
            "type": "approval_request", "action": "push", "description": description,
            "task_id": task["id"], "branch": branch, "changed_files": files,
        }), question=description)
        if not answer.approved:
            return result | {"git_outcome": "push_rejected"}
    pushed = await run_git(state, runtime, workspace, "push", {"branch": branch, "remote": "origin"})
    if not pushed.success:
        return result | {"git_outcome": "push_failed", "error": t.git_push_failed.format(branch=branch)}
    return result | {"git_outcome": "pushed"}


def _condition(state: OrchestratorState, runtime: NodeRuntime, text: str, branch: str, *,
               halted: bool) -> tuple[str, dict[str, Any]]:
    """What a condition on an approved commit changes: the branch, one more step, or a note."""
    rule = classify_modification(text)
    if rule.kind == "branch":
        chosen, warning = apply_branch_rule(branch, rule, rules_of(state), task_of(state)["id"],
                                            texts(run_language(state, runtime.context.settings)))
        return chosen, {"user_conditions": [text], **({"warnings": [warning]} if warning else {})}
    if rule.kind == "add_step" and not halted:
        return branch, added_step(state, runtime, text, branch)
    return branch, {"user_conditions": [text]}
