"""What a request is about in its workspace (app/graph/rules/request_scope.py) and the intake rules that
decide by it (app/graph/rules/classification.py `certain_classification`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.graph.rules.classification import certain_classification
from app.graph.rules.request_scope import RequestScope, covering_tests, is_test_file, list_files, named_paths, scope_of

LEAP_REQUEST = ("Implement leap_year() in leap.py as described below, so that the tests in test_leap.py pass. "
                "Do not change test_leap.py.\n\nA leap year, e.g. 1996, is divisible by 4.")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    files = {
        "calc.py": "def add(a, b):\n    return a + b\n",
        "leap.py": "def leap_year(year):\n    raise NotImplementedError\n",
        "test_leap.py": "import unittest\nfrom leap import leap_year\n",
        "tests/test_operations.py": "from calc import add\n",
        "tests/test_other.py": "import json\n",
        "pkg/util.py": "x = 1\n",
        "pkg/tests/check_util.py": "from pkg.util import x\n",
        "node_modules/dep/test_calc.py": "from calc import add\n",
        "web/cart.ts": "export const x = 1\n",
        "web/cart.spec.ts": "import { x } from './cart'\n",
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    return tmp_path


def test_named_paths_are_files_not_abbreviations_or_links() -> None:
    text = "Fix calc.py and src/app/main.ts (see https://example.com/x.py, e.g. v1.2.3, i.e. README.md)."
    assert named_paths(text) == ["calc.py", "src/app/main.ts", "README.md"]


@pytest.mark.parametrize(("path", "test"), [
    ("test_calc.py", True), ("calc_test.py", True), ("tests/helpers.py", True), ("web/cart.spec.ts", True),
    ("src/CalcTest.java", True), ("calc_test.go", True), ("calc.py", False), ("contest.py", False),
    ("testing_utils.py", False),
])
def test_test_files_are_told_by_name_or_folder(path: str, test: bool) -> None:
    assert is_test_file(path) is test


def test_the_scope_of_an_exercise_request_is_its_module_and_its_test(workspace: Path) -> None:
    scope = scope_of(LEAP_REQUEST, workspace)
    assert scope == RequestScope(targets=["leap.py"], named_tests=["test_leap.py"], functions=["leap_year"],
                                 tests=["test_leap.py"])
    assert scope.one_file


def test_covering_tests_are_found_by_name_and_by_import(workspace: Path) -> None:
    files = list_files(workspace)
    assert "node_modules/dep/test_calc.py" not in files  # dependencies are not the project
    assert covering_tests(workspace, files, ["calc.py"]) == ["tests/test_operations.py"]
    assert covering_tests(workspace, files, ["pkg/util.py"]) == ["pkg/tests/check_util.py"]
    assert covering_tests(workspace, files, ["web/cart.ts"]) == ["web/cart.spec.ts"]


def test_a_new_file_the_request_names_is_a_target(workspace: Path) -> None:
    scope = scope_of("Create utils/strings.py with a slugify(text) function", workspace)
    assert scope.targets == ["utils/strings.py"] and scope.tests == []


@pytest.mark.parametrize("query", [LEAP_REQUEST, "Add a subtract(a, b) function to calc.py",
                                   "Přidej do calc.py funkci mul(a, b)", "Please fix the bug in calc.py"])
def test_an_imperative_request_naming_a_file_is_certainly_one_code_task(workspace: Path, query: str) -> None:
    result = certain_classification(query, scope_of(query, workspace), workspace=True)
    assert result is not None
    assert (result.task_category, result.task_action, result.complexity) == ("single_task", "code", "simple")
    assert result.reasoning.startswith("rule:")


@pytest.mark.parametrize("query", ["What does add() in calc.py return?", "Jak funguje funkce add v calc.py?"])
def test_a_plain_question_is_certainly_advice(workspace: Path, query: str) -> None:
    result = certain_classification(query, scope_of(query, workspace), workspace=True)
    assert result is not None and (result.task_category, result.task_action) == ("advice", "respond")


@pytest.mark.parametrize(("query", "workspace_exists"), [
    ("Add a subtract(a, b) function to calc.py", False),  # nowhere to change it
    ("Improve the performance of the API", True),  # names no file or function
    ("Add login to a.py, b.py and c.py", True),  # too many files to be sure it is one task
    ("Why does calc.py fail? Fix it.", True),  # a question and a request: the model's call
])
def test_everything_else_is_the_models_call(workspace: Path, query: str, workspace_exists: bool) -> None:
    assert certain_classification(query, scope_of(query, workspace), workspace=workspace_exists) is None
