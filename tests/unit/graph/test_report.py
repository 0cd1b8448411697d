"""The honest account of a run (app/graph/rules/report.py): what was done, skipped, failed and is left."""

from __future__ import annotations

from typing import Any

import pytest

from app.graph.rules import report
from app.texts import CS, EN, Texts

GOALS = [{"id": "g1", "title": "Přidat endpoint"}, {"id": "g2", "title": "Doplnit testy"},
         {"id": "g3", "title": "Dokumentace"}]
STEPS = [{"index": 0, "instructions": "Napiš testy pro /health"},
         {"index": 1, "instructions": "Napiš testy pro /status"},
         {"index": 2, "instructions": "Spusť lint"}]


def _result(goal: int, step: int, success: bool, attempt: int = 1, files: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"goal_index": goal, "step_index": step, "success": success, "attempt": attempt,
            "changed_files": list(files), "summary": f"{goal}.{step}/{attempt}"}


def _halted_run(**more: Any) -> dict[str, Any]:
    """Goal 1 finished (its step retried once), goal 2: step 1 done, step 2 skipped, step 3 exhausted."""
    return {
        "goals": GOALS, "current_goal_index": 1, "steps": STEPS,
        "step_results": [
            _result(0, 0, False, 1, ("api.py",)), _result(0, 0, True, 2, ("api.py", "routes.py")),
            _result(1, 0, True, 1, ("tests/test_health.py",)),
            _result(1, 1, False, 1, ("junk.py",)), _result(1, 1, False, 2, ("junk.py",)),  # then skipped
            _result(1, 2, False, 3, ("lint.cfg",)),
        ],
        "goal_summaries": [{"goal_id": "g1", "title": "Přidat endpoint", "summary": "ok"}],
        "skipped": [{"goal_index": 1, "step_index": 1, "title": "Napiš testy pro /status", "reason": "flaky server"}],
        "failures": [{"goal_index": 1, "step_index": 2, "attempt": 3, "title": "Spusť lint",
                      "reason": "lint crashed", "action": "stop"}],
        "halt": {"kind": "exhausted", "message": "step 2.3 failed"},
        "branch": "task/abc", "commit_sha": "0123456789abcdef",
        **more,
    }


def test_done_slots_counts_a_retried_step_once_and_ignores_failed_and_skipped_results() -> None:
    done = report.done_slots(_halted_run())
    assert [(r["goal_index"], r["step_index"], r["attempt"]) for r in done] == [(0, 0, 2), (1, 0, 1)]


def test_done_slots_keeps_the_last_success_when_a_step_succeeded_twice() -> None:
    state = {"step_results": [_result(0, 0, True, 1), _result(0, 0, True, 2)]}
    assert [r["attempt"] for r in report.done_slots(state)] == [2]


def test_changed_files_excludes_failed_and_skipped_results_in_first_seen_order() -> None:
    assert report.changed_files(_halted_run()) == ["api.py", "routes.py", "tests/test_health.py"]


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (_halted_run(), ["Spusť lint", "Dokumentace"]),
        (_halted_run(goal_summaries=[{"goal_id": "g1", "title": "a"}, {"goal_id": "g3", "title": "c"}]),
         ["Spusť lint"]),
        (_halted_run(current_goal_index=1, goal_summaries=[{"goal_id": "g2", "title": "b"}]), ["Dokumentace"]),
        (_halted_run(current_goal_index=3), []),
        ({"goals": GOALS, "current_goal_index": 0, "steps": []}, ["Doplnit testy", "Dokumentace"]),
    ],
    ids=["current-goal-and-later-goals", "later-goal-already-finished", "current-goal-finished", "all-goals-passed",
         "nothing-started"],
)
def test_left_over_lists_unfinished_steps_and_goals_not_started_when_the_run_stops(
        state: dict[str, Any], expected: list[str]) -> None:
    assert report.left_over(state) == expected


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        (CS, ["Dokončeno 2 z 4 kroků.", "Hotové cíle: Přidat endpoint.",
              "Změněné soubory: api.py, routes.py, tests/test_health.py.",
              "Přeskočené kroky: 2.2 Napiš testy pro /status (flaky server).",
              "Selhalo: 2.3 Spusť lint – lint crashed", "Zbývá: Spusť lint; Dokumentace.",
              "Větev task/abc, commit 0123456789ab."]),
        (EN, ["Completed 2 of 4 steps.", "Finished goals: Přidat endpoint.",
              "Changed files: api.py, routes.py, tests/test_health.py.",
              "Skipped steps: 2.2 Napiš testy pro /status (flaky server).",
              "Failed: 2.3 Spusť lint – lint crashed", "Left: Spusť lint; Dokumentace.",
              "Branch task/abc, commit 0123456789ab."]),
    ],
    ids=["cs", "en"],
)
def test_report_lines_tell_what_was_done_skipped_failed_and_left_when_a_run_halts(
        t: Texts, expected: list[str]) -> None:
    assert report.report_lines(_halted_run(), t) == expected


def test_report_lines_omit_the_failure_when_the_run_did_not_halt() -> None:
    lines = report.report_lines(_halted_run(halt=None), EN)
    assert not any(line.startswith("Failed:") for line in lines)


@pytest.mark.parametrize(
    ("more", "expected"),
    [({}, True), ({"git_outcome": "commit_rejected"}, False), ({"git_outcome": "not_a_repo"}, False)],
    ids=["not-committed", "commit-rejected", "not-a-repo"],
)
def test_report_lines_say_the_work_is_uncommitted_only_when_no_reason_was_given(
        more: dict[str, Any], expected: bool) -> None:
    lines = report.report_lines(_halted_run(commit_sha=None, **more), EN)
    assert (EN.report_not_committed in lines) is expected


def test_report_lines_list_warnings_and_conditions_once_when_they_repeat() -> None:
    lines = report.report_lines(_halted_run(warnings=["tests not run", "tests not run"],
                                            user_conditions=["ne do mastera", "ne do mastera"]), EN)
    assert lines[-2:] == ["Warnings: tests not run", "User's conditions: ne do mastera"]


def test_error_text_starts_with_the_problem_then_the_facts_when_steps_ran() -> None:
    text = report.error_text("Step 2.3 failed.", _halted_run(), EN)
    assert text.startswith("Step 2.3 failed. Completed 2 of 4 steps.")
    assert "Left: Spusť lint; Dokumentace." in text
    assert "Failed:" not in text  # the problem already says it


def test_error_text_is_bounded_when_the_facts_are_long() -> None:
    files = tuple(f"src/module_{n}/very_long_file_name_{n}.py" for n in range(200))
    state = _halted_run(step_results=[_result(0, 0, True, 1, files)])
    text = report.error_text("Boom", state, EN)
    assert len(text) == report.ERROR_TEXT_LIMIT
    assert text.startswith("Boom. Completed 1 of 1 steps.") and text.endswith("…")


@pytest.mark.parametrize(
    "state", [{}, {"goals": GOALS, "step_results": []}], ids=["empty", "planned-but-not-started"],
)
def test_error_text_is_the_bare_problem_when_no_step_ran(state: dict[str, Any]) -> None:
    assert report.error_text("Plan was rejected.", state, CS) == "Plan was rejected."
