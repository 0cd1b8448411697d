"""evaluate (spec §7.9): success, forbidden files (fnmatch) and the changed-file budget."""

from __future__ import annotations

from fnmatch import fnmatch
from typing import Any

from app.graph.nodes._common import NodeRuntime
from app.graph.state import OrchestratorState
from app.schemas.domain import CheckStatus, Evaluation, EvaluationCheck


def forbidden_matches(files: list[str], patterns: list[str]) -> list[str]:
    """Files matching a forbidden pattern, by full path or by file name (`*.env` hits `a/b.env`)."""
    return [f for f in files if any(fnmatch(f, p) or fnmatch(f.rsplit("/", 1)[-1], p) for p in patterns)]


def evaluate_result(result: dict[str, Any], rules: dict[str, Any]) -> Evaluation:
    files = result.get("changed_files", [])
    checks = [EvaluationCheck(
        name="success",
        status=CheckStatus.PASSED if result.get("success") else CheckStatus.FAILED,
        message=result.get("summary", "")[:300],
    )]
    forbidden = forbidden_matches(files, rules.get("forbidden_files", []))
    checks.append(EvaluationCheck(
        name="forbidden_files",
        status=CheckStatus.BLOCKED if forbidden else CheckStatus.PASSED,
        message=f"forbidden files changed: {', '.join(forbidden)}" if forbidden else "",
    ))
    limit = rules.get("max_changed_files", 20)
    checks.append(EvaluationCheck(
        name="max_changed_files",
        status=CheckStatus.WARNING if len(files) > limit else CheckStatus.PASSED,
        message=f"{len(files)} files changed (limit {limit})" if len(files) > limit else "",
    ))
    acceptable = not any(c.status in (CheckStatus.BLOCKED, CheckStatus.FAILED) for c in checks)
    return Evaluation(acceptable=acceptable, checks=checks)


async def evaluate(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    last = state["step_results"][-1]
    evaluation = evaluate_result(last, state.get("rules", {}))
    updates: dict[str, Any] = {"evaluation": evaluation.model_dump(mode="json")}
    if not evaluation.acceptable:
        problems = "; ".join(c.message or c.name for c in evaluation.checks
                             if c.status in (CheckStatus.BLOCKED, CheckStatus.FAILED))
        updates["error"] = f"Krok {last['step_index'] + 1} cíle {last.get('goal_index', 0) + 1} neprošel: {problems}"
    return updates
