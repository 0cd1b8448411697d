"""Which command the checks run under `require_tests` (app/graph/rules/test_plan.py) and how a user's
answer to "which command runs the tests?" becomes one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.agents.test_command import TestCommand
from app.graph.routing import route_after_find_tests, route_by_category
from app.graph.rules.test_plan import command_for, command_from_answer, from_plan, to_plan


@pytest.mark.parametrize(("answer", "command"), [
    ("python3 -m pytest -q", "python3 -m pytest -q"),
    ("Spouští se `python3 check_calc.py`, díky", "python3 check_calc.py"),
    ("Run them with ```sh\nmake check\n``` please", "make check"),
    ("$ npm test\n(it needs node 20)", "npm test"),
    ("\n\n  cargo test --all  \n", "cargo test --all"),
])
def test_an_answer_names_its_command(answer: str, command: str) -> None:
    assert command_from_answer(answer) == command


@pytest.mark.parametrize("answer", ["", "   ", "no tests", "None.", "ne", "bez testů", "Nevím", "žádné",
                                    "I don't know", "x" * 501])
def test_an_answer_without_a_command_is_none(answer: str) -> None:
    assert command_from_answer(answer) is None


def _python_tests(root: Path) -> Path:
    (root / "calc.py").write_text("def f():\n    return 1\n")
    (root / "calc_test.py").write_text("import unittest\n")
    return root


def test_the_request_environment_wins_over_everything(tmp_path: Path) -> None:
    state: dict[str, Any] = {"environment": {"testCommand": "make ci"},
                             "test_plan": {"command": "make check", "source": "your answer", "origin": "user"}}
    found = command_for(state, _python_tests(tmp_path))
    assert found is not None and found.shell == "make ci"


def test_the_users_answer_wins_over_detection(tmp_path: Path) -> None:
    state: dict[str, Any] = {"test_plan": {"command": "make check", "source": "your answer", "origin": "remembered"}}
    found = command_for(state, _python_tests(tmp_path))
    assert found is not None and (found.shell, found.source) == ("make check", "your answer")


def test_detection_now_wins_over_what_was_detected_at_the_start(tmp_path: Path) -> None:
    start = to_plan(TestCommand(argv=["go", "test", "./..."], source="go.mod"), "detected")
    found = command_for({"test_plan": start}, _python_tests(tmp_path))
    assert found is not None and found.argv is not None and "go" not in found.argv
    assert command_for({"test_plan": start}, tmp_path / "nothing-here") == from_plan(start)


def test_no_plan_and_nothing_to_detect_is_none(tmp_path: Path) -> None:
    assert command_for({}, tmp_path) is None
    assert from_plan({"command": ["", "x"], "source": "?", "origin": "detected"}) is None


def _state(category: str, action: str, *, require_tests: bool, plan: Any = None, error: str | None = None) -> Any:
    return {"task_category": category, "task_action": action, "rules": {"require_tests": require_tests},
            "test_plan": plan, "error": error}


@pytest.mark.parametrize(("category", "action", "target"), [
    ("single_task", "code", "find_tests"), ("single_task", "mixed", "find_tests"), ("epic", "code", "find_tests"),
    ("generative", "code", "find_tests"), ("single_task", "respond", "plan"), ("advice", "respond", "respond"),
    ("single_task", "tracker_ops", "plan"),
])
def test_work_that_may_change_code_learns_its_test_command_first(category: str, action: str, target: str) -> None:
    assert route_by_category(_state(category, action, require_tests=True)) == target
    assert route_by_category(_state(category, action, require_tests=False)) != "find_tests"


def test_after_find_tests_the_work_is_planned_or_the_run_ends() -> None:
    plan = {"command": "make test", "source": "Makefile", "origin": "detected"}
    assert route_by_category(_state("epic", "code", require_tests=True, plan=plan)) == "plan_epic"
    assert route_after_find_tests(_state("epic", "code", require_tests=True, plan=plan)) == "plan_epic"
    assert route_after_find_tests(_state("single_task", "code", require_tests=True, error="no command")) == "finalize"
