"""How a finished step is judged (app/agents/outcome.py), the same for every runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.agents.base import AgentJob, AgentResult
from app.agents.outcome import judge, uncleaned
from app.agents.workspace import WorkspaceManager


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "ws" / ".jervis").mkdir(parents=True)
    return tmp_path / "ws"


def write_result(workspace: Path, **result: object) -> None:
    (workspace / ".jervis" / "result.json").write_text(json.dumps(result))


def job(workspace: Path, expect_changes: bool = True) -> AgentJob:
    return AgentJob(thread_id="t", task_id="t", client_id="c", agent_type="aider", workspace=workspace,
                    expect_changes=expect_changes)


def test_success_needs_a_valid_result_and_exit_zero(workspace: Path) -> None:
    write_result(workspace, success=True, summary="done", changedFiles=["a.py"], costUsd=0.02)
    result = judge(WorkspaceManager(workspace.parent), job(workspace), exit_code=0, log_tail="tail")
    assert (result.success, result.changed_files, result.cost_usd, result.log_tail) == (True, ["a.py"], 0.02, "tail")


def test_exit_zero_without_result_is_a_failure(workspace: Path) -> None:
    result = judge(WorkspaceManager(workspace.parent), job(workspace), exit_code=0, log_tail="")
    assert not result.success and "no .jervis/result.json" in result.summary


def test_success_claimed_with_non_zero_exit_is_a_failure(workspace: Path) -> None:
    write_result(workspace, success=True, summary="done", changedFiles=["a.py"])
    result = judge(WorkspaceManager(workspace.parent), job(workspace), exit_code=3, log_tail="")
    assert not result.success and "exited with code 3" in result.summary


@pytest.mark.parametrize(("expect_changes", "success"), [(True, False), (False, True)])
def test_success_without_changes_fails_only_when_changes_were_expected(workspace: Path, expect_changes: bool,
                                                                       success: bool) -> None:
    write_result(workspace, success=True, summary="nothing to do", changedFiles=[])
    result = judge(WorkspaceManager(workspace.parent), job(workspace, expect_changes), exit_code=0, log_tail="")
    assert result.success is success
    assert result.unchanged is not success and result.summary == "nothing to do"  # worded by the caller


def test_a_known_failure_wins_over_any_result(workspace: Path) -> None:
    write_result(workspace, success=True, summary="done", changedFiles=["a.py"])
    result = judge(WorkspaceManager(workspace.parent), job(workspace), exit_code=None, log_tail="",
                   failure="Agent aider timed out after 600 s")
    assert not result.success and result.summary == "Agent aider timed out after 600 s"


def test_a_workspace_left_uncleaned_fails_the_step_and_says_what_was_left() -> None:
    passed = AgentResult(success=True, summary="Done.", changed_files=["a.py"], test_outcome="passed")
    assert uncleaned(passed, None) == passed
    failed = uncleaned(passed, "The workspace could not be cleaned after the step: .jervis/x (Permission denied)")
    assert not failed.success and failed.test_outcome is None and failed.changed_files == ["a.py"]
    assert failed.summary == "Done. The workspace could not be cleaned after the step: .jervis/x (Permission denied)"
