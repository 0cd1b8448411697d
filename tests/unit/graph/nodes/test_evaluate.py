"""Step evaluation (app/graph/nodes/evaluate.py): success, forbidden files, changed-file budget.
Tests and review run in the end-to-end suites (tests/integration/test_recovery.py)."""

from __future__ import annotations

from typing import Any

import pytest

from app.graph.nodes.evaluate import evaluate_result, forbidden_matches
from app.schemas.domain import CheckStatus
from app.schemas.kotlin import ProjectRules

DEFAULT_RULES = ProjectRules().model_dump()  # forbidden: *.env, secrets/*; max 20 files


def _result(success: bool = True, files: list[str] | None = None, summary: str = "done") -> dict[str, Any]:
    return {"step_index": 0, "success": success, "summary": summary, "changed_files": files or []}


def _status(evaluation: Any, name: str) -> CheckStatus:
    return next(c.status for c in evaluation.checks if c.name == name)


@pytest.mark.parametrize(
    ("files", "patterns", "expected"),
    [
        (["config/prod.env"], ["*.env"], ["config/prod.env"]),  # basename and full path both match
        ([".env"], ["*.env"], [".env"]),
        (["secrets/key.pem"], ["secrets/*"], ["secrets/key.pem"]),
        (["secrets/nested/key.pem"], ["secrets/*"], ["secrets/nested/key.pem"]),  # fnmatch * crosses "/"
        (["deploy/id_rsa"], ["id_rsa"], ["deploy/id_rsa"]),  # by file name only
        (["app/main.py", "README.md"], ["*.env", "secrets/*"], []),
        (["app/environment.py"], ["*.env"], []),
        (["app/main.py", "local.env", "secrets/token"], ["*.env", "secrets/*"], ["local.env", "secrets/token"]),
        (["local.env"], [], []),
    ],
    ids=["nested-env", "dotenv", "secrets-dir", "secrets-deep", "basename", "clean", "env-in-name",
         "keeps-order", "no-patterns"],
)
def test_forbidden_matches_matches_full_path_or_basename(files: list[str], patterns: list[str],
                                                         expected: list[str]) -> None:
    assert forbidden_matches(files, patterns) == expected


def test_evaluate_result_is_acceptable_when_step_succeeded_on_allowed_files() -> None:
    evaluation = evaluate_result(_result(files=["app/health.py"]), DEFAULT_RULES)
    assert evaluation.acceptable is True
    assert [(c.name, c.status) for c in evaluation.checks] == [
        ("success", CheckStatus.PASSED), ("forbidden_files", CheckStatus.PASSED),
        ("max_changed_files", CheckStatus.PASSED)]


def test_evaluate_result_fails_with_the_summary_when_step_failed() -> None:
    evaluation = evaluate_result(_result(success=False, summary="agent crashed"), DEFAULT_RULES)
    assert evaluation.acceptable is False
    check = evaluation.checks[0]
    assert (check.name, check.status, check.message) == ("success", CheckStatus.FAILED, "agent crashed")
    assert evaluation.feedback == "agent crashed"  # what the reflection and the next attempt read


@pytest.mark.parametrize("forbidden", ["deploy/prod.env", "secrets/api-key.txt"])
def test_evaluate_result_blocks_when_a_forbidden_file_changed(forbidden: str) -> None:
    evaluation = evaluate_result(_result(files=["app/main.py", forbidden]), DEFAULT_RULES)
    assert evaluation.acceptable is False
    check = next(c for c in evaluation.checks if c.name == "forbidden_files")
    assert check.status == CheckStatus.BLOCKED
    assert forbidden in check.message and "app/main.py" not in check.message


def test_evaluate_result_fails_the_step_when_too_many_files_changed() -> None:
    files = [f"src/f{i}.py" for i in range(4)]
    evaluation = evaluate_result(_result(files=files), DEFAULT_RULES | {"max_changed_files": 3})
    assert evaluation.acceptable is False
    check = next(c for c in evaluation.checks if c.name == "max_changed_files")
    assert check.status == CheckStatus.FAILED
    assert "4 files changed, at most 3 allowed: narrow the change" in check.message
    assert evaluation.feedback == check.message


def test_evaluate_result_writes_feedback_in_the_run_language() -> None:
    evaluation = evaluate_result(_result(files=["a.env"]), DEFAULT_RULES, "cs")
    assert evaluation.feedback == "Změněny zakázané soubory: a.env. Tyto soubory neměň."


def test_evaluate_result_passes_budget_when_exactly_at_the_limit() -> None:
    files = [f"src/f{i}.py" for i in range(3)]
    evaluation = evaluate_result(_result(files=files), DEFAULT_RULES | {"max_changed_files": 3})
    assert _status(evaluation, "max_changed_files") == CheckStatus.PASSED


def test_evaluate_result_uses_default_budget_of_20_when_rules_are_empty() -> None:
    assert _status(evaluate_result(_result(files=[f"f{i}" for i in range(20)]), {}), "max_changed_files") \
        == CheckStatus.PASSED
    over = evaluate_result(_result(files=[f"f{i}" for i in range(21)]), {})
    assert _status(over, "max_changed_files") == CheckStatus.FAILED
    assert _status(over, "forbidden_files") == CheckStatus.PASSED  # no patterns without rules
