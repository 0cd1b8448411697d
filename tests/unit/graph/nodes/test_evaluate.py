"""Step evaluation (app/graph/nodes/evaluate.py): success, forbidden files (put back as they were
before the step), changed-file budget. Tests and review run in the end-to-end suites
(tests/integration/test_recovery.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.runtime import Runtime

from app.graph.context import RunContext
from app.graph.nodes.evaluate import evaluate, evaluate_result, forbidden_matches
from app.schemas.domain import CheckStatus
from app.schemas.kotlin import ProjectRules
from tests.support import git, make_git_repo
from tests.unit.graph.graph_support import start

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


# ------------------------------------------------------------------ forbidden files put back
def forbidden_state(
    workspace_path: str, *, changed: list[str], base: str | None, success: bool = True,
) -> dict[str, Any]:
    state, _ = start("Přidej endpoint /health", workspace_path=workspace_path)
    return state | {"task": state["task"] | {"language": "en"}, "step_results": [{
        "step_index": 0, "goal_index": 0, "success": success, "summary": "done", "step_type": "code",
        "changed_files": changed, "base_tree": base, "attempt": 1}]}


@pytest.fixture
def workspace(ctx: RunContext) -> Path:
    repo = make_git_repo(ctx.workspaces.root / "clients" / "c1" / "default")
    (repo / "config").mkdir()
    (repo / "config" / "prod.env").write_text("DB=prod\n")
    (repo / ".env").write_text("A=1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "config")
    return repo


async def base_of(ctx: RunContext, workspace: Path) -> str:
    return (await ctx.snapshots.ensure(workspace, "thread-t-g0-s0-r0")).tree


async def test_forbidden_files_the_agent_wrote_are_put_back_and_the_feedback_says_so(ctx: RunContext,
                                                                                     workspace: Path) -> None:
    base = await base_of(ctx, workspace)
    (workspace / ".env").write_text("A=stolen\n")                   # modified
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "new.key").write_text("k")             # created: did not exist
    (workspace / "config" / "prod.env").unlink()                    # deleted
    (workspace / "app.py").write_text("print('ok')\n")              # allowed work stays
    changed = [".env", "app.py", "config/prod.env", "secrets/new.key"]

    update = await evaluate(forbidden_state("clients/c1/default", changed=changed, base=base), Runtime(context=ctx))

    assert (workspace / ".env").read_text() == "A=1\n"
    assert (workspace / "config" / "prod.env").read_text() == "DB=prod\n"
    assert not (workspace / "secrets").exists()
    assert (workspace / "app.py").read_text() == "print('ok')\n"
    check = next(c for c in update["evaluation"]["checks"] if c["name"] == "forbidden_files")
    assert check["status"] == "blocked"
    assert check["message"].endswith("Put back as they were before the step: .env, config/prod.env, secrets/new.key.")
    assert "Put back as they were" in update["evaluation"]["feedback"]  # what the retry reads
    assert update["step_results"][0]["success"] is False


async def test_a_forbidden_file_deleted_and_created_again_gets_its_old_content(ctx: RunContext,
                                                                              workspace: Path) -> None:
    base = await base_of(ctx, workspace)
    (workspace / ".env").unlink()
    (workspace / ".env").write_text("A=new\n")
    (workspace / "config" / "prod.env").unlink()
    (workspace / "config" / "prod.env").symlink_to("../.env")  # now a link, pointing elsewhere

    await evaluate(forbidden_state("clients/c1/default", changed=[".env", "config/prod.env"], base=base),
                   Runtime(context=ctx))

    assert (workspace / ".env").read_text() == "A=1\n"
    assert not (workspace / "config" / "prod.env").is_symlink()
    assert (workspace / "config" / "prod.env").read_text() == "DB=prod\n"


async def test_putting_back_never_writes_through_a_symlink_out_of_the_workspace(ctx: RunContext, workspace: Path,
                                                                                tmp_path_factory) -> None:
    base = await base_of(ctx, workspace)
    outside = tmp_path_factory.mktemp("outside")
    (outside / "prod.env").write_text("theirs\n")
    (workspace / "config" / "prod.env").unlink()
    (workspace / "config").rmdir()
    (workspace / "config").symlink_to(outside)  # the agent swapped config/ for a link out
    (workspace / "leak.env").symlink_to(outside / "prod.env")

    await evaluate(forbidden_state("clients/c1/default", changed=["config/prod.env", "leak.env"], base=base),
                   Runtime(context=ctx))

    assert (outside / "prod.env").read_text() == "theirs\n"
    assert not (workspace / "leak.env").exists() and not (workspace / "leak.env").is_symlink()
    assert (workspace / "config" / "prod.env").read_text() == "DB=prod\n"


async def test_without_a_snapshot_forbidden_files_are_reported_as_left(ctx: RunContext) -> None:
    plain = ctx.workspaces.root / "clients" / "c1" / "plain"
    plain.mkdir(parents=True)
    (plain / "local.env").write_text("mine\n")

    update = await evaluate(forbidden_state("clients/c1/plain", changed=["local.env"], base=None),
                            Runtime(context=ctx))

    assert (plain / "local.env").read_text() == "mine\n"  # it may have been there before: never deleted blindly
    check = next(c for c in update["evaluation"]["checks"] if c["name"] == "forbidden_files")
    assert check["message"].endswith("Could not be put back (the workspace has no snapshot of the step's start), "
                                     "left as they are: local.env.")
