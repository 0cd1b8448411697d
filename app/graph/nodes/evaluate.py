"""evaluate (spec §7.9): did the step do its job? The agent's success, forbidden files and the
changed-file budget, then — for code steps that changed something — the files' integrity
(`app/graph/rules/integrity.py`), the project's tests (`require_tests`) and an LLM review
(`require_review`). A failed check fails the step with
feedback the reflection and the next attempt read; a check that could not run is a warning.
Forbidden files a code step wrote are put back as they were before the step at once (deleted if
they did not exist), so they never wait in the workspace for a retry or a user's answer."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from app.graph import verification
from app.graph.rules import agent_files, integrity, request_scope, step_changes
from app.graph.rules.test_plan import command_for
from app.graph.run_state import NodeRuntime, current_goal, current_step, current_thread_id, emit, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Attempts, Outcome, Position, Tests, rules_of
from app.graph.state_parts import Rules, StepResultDict, TaskDict
from app.schemas.domain import CheckStatus, CodingStep, Evaluation, EvaluationCheck, ReviewVerdict, StepType
from app.texts import Texts, texts
from app.texts.clip import clip

log = logging.getLogger(__name__)

FEEDBACK_CHARS = 4000


def forbidden_matches(files: list[str], patterns: list[str]) -> list[str]:
    """Files matching a forbidden pattern, by full path or by file name (`*.env` hits `a/b.env`)."""
    return [f for f in files if any(fnmatch(f, p) or fnmatch(f.rsplit("/", 1)[-1], p) for p in patterns)]


def basic_checks(result: Mapping[str, Any], rules: Rules, t: Texts) -> list[EvaluationCheck]:
    """What needs no tool: the agent's verdict, forbidden files, how many files changed."""
    files = result.get("changed_files", [])
    checks = [EvaluationCheck(
        name="success",
        status=CheckStatus.PASSED if result.get("success") else CheckStatus.FAILED,
        message="" if result.get("success") else result.get("summary", "")[:1000],
    )]
    forbidden = forbidden_matches(files, rules.get("forbidden_files", []))
    checks.append(EvaluationCheck(
        name="forbidden_files",
        status=CheckStatus.BLOCKED if forbidden else CheckStatus.PASSED,
        message=t.check_forbidden.format(files=", ".join(forbidden)) if forbidden else "",
    ))
    limit = rules.get("max_changed_files", 20)
    too_many = len(files) > limit
    checks.append(EvaluationCheck(
        name="max_changed_files",
        status=CheckStatus.FAILED if too_many else CheckStatus.PASSED,
        message=t.check_too_many_files.format(count=len(files), limit=limit) if too_many else "",
    ))
    return checks


def verdict(checks: list[EvaluationCheck]) -> Evaluation:
    failed = [c for c in checks if c.status in (CheckStatus.BLOCKED, CheckStatus.FAILED)]
    feedback = "\n".join(c.message or c.name for c in failed)
    return Evaluation(acceptable=not failed, checks=checks, feedback=clip(feedback, FEEDBACK_CHARS))


def evaluate_result(result: Mapping[str, Any], rules: Rules, language: str = "en") -> Evaluation:
    """The tool-free part of the evaluation (unit-testable, and all non-code steps get)."""
    return verdict(basic_checks(result, rules, texts(language)))


async def evaluate(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    last = state["step_results"][-1]
    rules = rules_of(state)
    language = run_language(state, ctx.settings)
    t = texts(language)
    checks = basic_checks(last, rules, t)
    forbidden = forbidden_matches(last.get("changed_files", []), rules.get("forbidden_files", []))
    if forbidden and last.get("step_type") == StepType.CODE:
        note = await _revert_forbidden(runtime, task_of(state), last.get("base_tree"), forbidden, t)
        checks = [check.model_copy(update={"message": f"{check.message} {note}"})
                  if check.name == "forbidden_files" else check for check in checks]
    warnings: list[str] = []
    timing: dict[str, Any] = {}  # the longest test run that ended by itself: the next run's deadline
    code_changed = last.get("step_type") == StepType.CODE and last.get("changed_files")
    if code_changed and all(c.status == CheckStatus.PASSED for c in checks):
        step = CodingStep.model_validate(current_step(state))
        task = task_of(state)
        workspace = ctx.workspaces.existing(task["workspace_path"])
        checks.append(await _integrity(state, runtime, step, workspace, last, t))
        if rules.get("require_tests") and checks[-1].status == CheckStatus.PASSED:
            checks.append(await _tests(state, runtime, step, workspace, t, warnings, timing))
        if rules.get("require_review") and checks[-1].status != CheckStatus.FAILED:
            checks.append(await _review(state, runtime, step, workspace, last, t, warnings, language))
    evaluation = verdict(checks)
    emit({"type": "verification", "acceptable": evaluation.acceptable,
          "checks": [c.model_dump(mode="json") for c in checks if c.status != CheckStatus.PASSED or c.name in
                     ("integrity", "tests", "review")]})
    known = set(Outcome.of(state).warnings or [])
    fresh = [w for w in dict.fromkeys(warnings) if w not in known]
    updates: dict[str, Any] = {"evaluation": evaluation.model_dump(mode="json")}
    if not evaluation.acceptable and last.get("success"):  # the verdict joins the attempt's result
        updates["step_results"] = [last | {"success": False}]
    return updates | timing | ({"warnings": fresh} if fresh else {})


async def _revert_forbidden(runtime: NodeRuntime, task: TaskDict, base: str | None, forbidden: list[str],
                            t: Texts) -> str:
    """Put the forbidden files back as they were at the step's start; what the feedback says."""
    ctx = runtime.context
    workspace = ctx.workspaces.resolve(task["workspace_path"])
    reverted = await step_changes.revert_paths(ctx.snapshots, workspace, base, forbidden)
    kept = [path for path in forbidden if path not in reverted]
    notes = [t.forbidden_reverted.format(files=", ".join(reverted))] if reverted else []
    notes += [t.forbidden_kept.format(files=", ".join(kept))] if kept else []
    log.info("forbidden files of the step: put back %s, left %s", reverted or "-", kept or "-")
    return " ".join(notes)


async def _integrity(state: OrchestratorState, runtime: NodeRuntime, step: CodingStep, workspace: Path,
                     last: StepResultDict, t: Texts) -> EvaluationCheck:
    """Files still whole: no lost definitions, Python that parses, no sentence-named files. A
    changed file the agent left as a symlink (or as anything but a regular file) is not read
    (`agent_files`): the check fails saying so, and nothing of its target is used."""
    base = last.get("base_tree")
    files, unread = [], []
    for path in filter(integrity.judged, last.get("changed_files", [])):  # the rest cannot fail it: not read
        now = agent_files.read(workspace, path, max_bytes=integrity.MAX_BYTES)
        if now.refused:
            log.warning("changed file not read: %s", now.refused)
            unread.append(t.check_not_read.format(path=path))
            continue
        files.append(integrity.ChangedFile(path, await step_changes.base_content(runtime.context.snapshots,
                                                                                  workspace, base, path), now.text))
    goal = current_goal(state)
    asked = "\n".join((step.instructions, goal["title"], goal.get("description", ""), task_of(state)["query"]))
    found = unread + integrity.problems(files, asked, step.files, t)
    if not found:  # whole files, but does the code still import? (no tests needed to see that)
        importers = await asyncio.to_thread(request_scope.importers_of, workspace, [f.path for f in files])
        found = integrity.broken_imports(files, importers, t)
    return EvaluationCheck(name="integrity", status=CheckStatus.FAILED if found else CheckStatus.PASSED,
                           message="\n".join(found))


async def _tests(state: OrchestratorState, runtime: NodeRuntime, step: CodingStep, workspace: Any, t: Texts,
                 warnings: list[str], timing: dict[str, Any]) -> EvaluationCheck:
    ctx = runtime.context
    command = command_for(state, workspace)
    if command is None:
        warnings.append(t.check_no_test_command)
        return EvaluationCheck(name="tests", status=CheckStatus.WARNING, message=t.check_no_test_command)
    emit({"type": "tests_start", "command": command.label()})
    run = await verification.run_tests(
        ctx, command=command, workspace=workspace, step=step, thread_id=current_thread_id(),
        task=task_of(state), goal_index=Position.of(state).current_goal_index, attempt=Attempts.of(state).attempt,
        on_log=lambda line: emit({"type": "agent_log", "agent": "tests", "line": line}),
        longest=Tests.of(state).test_seconds)
    if run.seconds is not None:
        timing["test_seconds"] = max(run.seconds, Tests.of(state).test_seconds or 0.0)
    if run.outcome == "passed":
        return EvaluationCheck(name="tests", status=CheckStatus.PASSED, message=run.summary)
    if run.outcome == "not_run":  # under require_tests, work whose tests could not run is not done
        return EvaluationCheck(name="tests", status=CheckStatus.FAILED,
                               message=t.check_tests_not_run.format(reason=run.summary))
    return EvaluationCheck(name="tests", status=CheckStatus.FAILED,
                           message=t.check_tests_failed.format(command=run.command, output=run.output))


async def _review(state: OrchestratorState, runtime: NodeRuntime, step: CodingStep, workspace: Any,
                  last: StepResultDict, t: Texts, warnings: list[str], language: str) -> EvaluationCheck:
    ctx = runtime.context
    diff = await step_changes.diff(ctx.snapshots, workspace, last.get("base_tree"))
    goal = current_goal(state)
    goal_text = f"{goal['title']}\n{goal.get('description', '')}".strip()
    if goal_text.rstrip("…") in step.instructions:  # a single task's goal is its request: said once
        goal_text = ""
    result = await verification.review(ctx, goal=goal_text, step=step.instructions, diff=diff, language=language)
    if isinstance(result, ReviewVerdict):
        if result.approved:
            return EvaluationCheck(name="review", status=CheckStatus.PASSED, message=result.summary)
        issues = "; ".join(result.issues) or result.summary or "-"
        return EvaluationCheck(name="review", status=CheckStatus.FAILED,
                               message=t.check_review_rejected.format(issues=issues))
    message = t.check_review_no_verdict.format(reason=result)
    warnings.append(message)
    return EvaluationCheck(name="review", status=CheckStatus.WARNING, message=message)
