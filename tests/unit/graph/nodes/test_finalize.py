"""Fallback report and git notes of the final answer (app/graph/nodes/finalize.py)."""

from __future__ import annotations

from typing import Any

import pytest

from app.graph.nodes.finalize import GIT_NOTES, git_note, structured_summary


def _step(index: int, success: bool, files: list[str]) -> dict[str, Any]:
    return {"step_index": index, "success": success, "summary": f"step {index}", "changed_files": files}


def test_structured_summary_counts_steps_and_lists_files_of_successful_steps() -> None:
    state = {"task": {"id": "t", "query": "q"}, "step_results": [
        _step(0, True, ["app/a.py", "app/b.py"]), _step(1, False, ["app/failed.py"]), _step(2, True, ["app/a.py"])]}
    assert structured_summary(state) == "Dokončeno 2 z 3 kroků. Změněné soubory: app/a.py, app/b.py."


def test_structured_summary_reports_the_problem_when_state_has_error() -> None:
    state = {"step_results": [_step(0, False, [])], "error": "Krok 1 cíle 1 neprošel: boom"}
    assert structured_summary(state) == "Dokončeno 0 z 1 kroků. Problém: Krok 1 cíle 1 neprošel: boom"


def test_structured_summary_handles_a_run_without_steps() -> None:
    assert structured_summary({}) == "Dokončeno 0 z 0 kroků."


@pytest.mark.parametrize(
    ("outcome", "branch", "expected"),
    [
        ("committed", "task/t1", "Změny jsou commitnuté ve větvi task/t1."),
        ("pushed", "task/t1", "Změny jsou commitnuté a pushnuté ve větvi task/t1."),
        ("push_rejected", "task/t1", "Push byl zamítnut uživatelem; commit zůstal jen lokálně ve větvi task/t1."),
        ("push_failed", "task/t1", "Push selhal; commit zůstal jen lokálně ve větvi task/t1."),
        ("commit_rejected", None, GIT_NOTES["commit_rejected"]),
        ("not_a_repo", None, GIT_NOTES["not_a_repo"]),
        ("committed", None, "Změny jsou commitnuté ve větvi -."),
        ("no_changes", None, ""),
        (None, None, ""),
    ],
)
def test_git_note_describes_the_git_outcome(outcome: str | None, branch: str | None, expected: str) -> None:
    assert git_note({"git_outcome": outcome, "branch": branch}) == expected
