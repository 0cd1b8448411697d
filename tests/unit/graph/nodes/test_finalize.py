"""Fallback report and git notes of the final answer (app/graph/nodes/finalize.py)."""

from __future__ import annotations

from typing import Any

import pytest

from app.graph.nodes.finalize import git_note, structured_summary, usable_report
from app.texts import CS, EN


def _step(index: int, success: bool, files: list[str], attempt: int = 1) -> dict[str, Any]:
    return {"step_index": index, "success": success, "summary": f"step {index}", "changed_files": files,
            "attempt": attempt}


def test_structured_summary_counts_steps_once_and_lists_files_of_successful_steps() -> None:
    state = {"task": {"id": "t", "query": "q"}, "git_outcome": "committed", "branch": "task/t", "commit_sha": "a" * 40,
             "step_results": [_step(0, True, ["app/a.py", "app/b.py"]), _step(1, False, ["app/failed.py"]),
                              _step(1, True, ["app/c.py"], attempt=2), _step(2, True, ["app/a.py"])]}
    assert structured_summary(state, CS) == ("Dokončeno 3 z 3 kroků. Změněné soubory: app/a.py, app/b.py, app/c.py. "
                                             "Větev task/t, commit aaaaaaaaaaaa.")


def test_structured_summary_says_when_finished_work_is_not_committed() -> None:
    state = {"step_results": [_step(0, True, ["a.py"])]}
    assert structured_summary(state, EN) == ("Completed 1 of 1 steps. Changed files: a.py. "
                                             "The finished work stays uncommitted in the workspace.")


def test_structured_summary_handles_a_run_without_steps() -> None:
    assert structured_summary({}, CS) == "Dokončeno 0 z 0 kroků."


@pytest.mark.parametrize(
    ("outcome", "branch", "expected"),
    [
        ("committed", "task/t1", "Změny jsou commitnuté ve větvi task/t1."),
        ("pushed", "task/t1", "Změny jsou commitnuté a pushnuté ve větvi task/t1."),
        ("push_rejected", "task/t1", "Push byl zamítnut uživatelem; commit zůstal jen lokálně ve větvi task/t1."),
        ("push_failed", "task/t1", "Push selhal; commit zůstal jen lokálně ve větvi task/t1."),
        ("commit_rejected", None, CS.git_commit_rejected),
        ("not_a_repo", None, CS.git_not_a_repo),
        ("committed", None, "Změny jsou commitnuté ve větvi -."),
        ("no_changes", None, ""),
        (None, None, ""),
    ],
)
def test_git_note_describes_the_git_outcome(outcome: str | None, branch: str | None, expected: str) -> None:
    assert git_note({"git_outcome": outcome, "branch": branch}, CS) == expected


def test_git_note_follows_the_language() -> None:
    note = git_note({"git_outcome": "committed", "branch": "task/t1"}, EN)
    assert note == "The changes are committed on branch task/t1."


@pytest.mark.parametrize(("text", "language", "usable"), [
    ("Do calc.py přibyla funkce multiply. Změny jsou ve větvi task/t1.", "cs", True),
    ("The multiply function was added to calc.py.", "en", True),
    # seen on the embedded model for a Czech run: English, Markdown, "still running"
    ("### What is Left\nThe orchestration for the user is still running.", "cs", False),
    ("The multiply function was added to calc.py.", "cs", False),
    ("# Report\nThe function was added.", "en", False),
])
def test_a_written_report_is_used_only_in_plain_sentences_of_the_runs_language(text: str, language: str,
                                                                               usable: bool) -> None:
    assert usable_report(text, language) is usable
