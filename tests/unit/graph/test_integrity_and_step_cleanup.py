"""The files-still-whole check of code steps (app/graph/rules/integrity.py), and the planner's clean-up
of steps that only test, commit or operate the machine (app/graph/rules/step_cleanup.py): both written
against what the embedded 1.5B model was seen doing (bench/embedded_run.py)."""

from __future__ import annotations

import logging

import pytest

from app.graph.rules.integrity import ChangedFile, broken_imports, judged, problems
from app.graph.rules.step_cleanup import cleaned_steps, is_orchestrator_duty, without_orchestrator_duties
from app.schemas.domain import CodingStep, StepType
from app.texts import texts

EN = texts("en")
CALC = "def add(a, b):\n    return a + b\n"


def test_a_file_rewritten_without_its_functions_fails_naming_what_was_lost() -> None:
    """Seen on the embedded model: a 'test it' step replaced calc.py with a script calling it."""
    rewritten = ChangedFile("calc.py", CALC + "\n\ndef subtract(a, b):\n    return a - b\n",
                            "import calc\n\nprint(calc.subtract(5, 3))\n")
    assert problems([rewritten], "Test the function", ["calc.py"], EN) == [
        "calc.py lost add, subtract, which the step did not ask for. Keep the file's content and only add or "
        "change what the step asks."]
    # a name merely mentioned stays; one the words ask to replace may go
    assert problems([rewritten], "Test the subtract function", ["calc.py"], EN)[0].startswith(
        "calc.py lost add, subtract, which")
    assert problems([rewritten], "Replace subtract with a script", ["calc.py"], EN)[0].startswith(
        "calc.py lost add, which")


DARTS = 'def score(x, y):\n    """Points of a dart at (x, y)."""\n    pass\n'
DARTS_REQUEST = ("# Instructions\n\nCalculate the points scored in a single toss of a Darts game. Write a function "
                 "score that returns the score of a dart landing at (x, y).\n\nUse the above instructions to modify "
                 "the supplied files: darts.py\nDon't change the names of existing functions or classes, as they may "
                 "be referenced from other code like unit tests, etc.")


def test_a_renamed_public_function_fails_though_the_request_mentions_it() -> None:
    """Seen on the embedded model: darts' `score` committed as `calculate_score`, every test erroring at import."""
    renamed = ChangedFile("darts.py", DARTS, "def calculate_score(x, y):\n    return 10 if x * x + y * y <= 1 else 0\n")
    [problem] = problems([renamed], DARTS_REQUEST, ["darts.py"], EN)
    assert problem.startswith("darts.py lost score, which the step did not ask for.")
    kept = ChangedFile("darts.py", DARTS, "def score(x, y):\n    return 10 if x * x + y * y <= 1 else 0\n")
    assert problems([kept], DARTS_REQUEST, ["darts.py"], EN) == []
    # keeping the names wins over a sentence that would allow a removal
    assert problems([renamed], DARTS_REQUEST + "\nRename score if you like.", ["darts.py"], EN) != []
    assert problems([renamed], "Přejmenuj score na calculate_score.", ["darts.py"], EN) == []


def test_an_added_function_passes_and_a_removal_the_step_asks_for_passes() -> None:
    added = ChangedFile("calc.py", CALC, CALC + "\n\ndef subtract(a, b):\n    return a - b\n")
    assert problems([added], "Add subtract(a, b)", ["calc.py"], EN) == []
    removed = ChangedFile("calc.py", CALC + "\n\ndef old(a):\n    return a\n", CALC)
    assert problems([removed], "Remove the unused function old()", ["calc.py"], EN) == []


def test_python_that_no_longer_parses_fails_with_the_line() -> None:
    broken = ChangedFile("pkg/calc.py", CALC, "def add(a, b)\n    return a + b\n")
    [problem] = problems([broken], "Add a docstring", [], EN)
    assert problem.startswith("pkg/calc.py no longer parses (line 1: ")
    assert problems([ChangedFile("new.py", None, "def f(:\n")], "Create new.py", [], EN)[0].startswith(
        "new.py no longer parses")


def test_a_created_file_named_like_a_sentence_fails_unless_the_plan_named_it() -> None:
    """Seen on the embedded model: Aider took a line of the answer for a file name."""
    stray = ChangedFile("2. Add the following code to the end of the file", None, "def subtract(a, b): ...\n")
    assert problems([stray], "Add subtract", ["calc.py"], EN) == [
        "A file named like a sentence was created: 2. Add the following code to the end of the file. "
        "Write the change into the file the step is about."]
    assert problems([stray], "", ["2. Add the following code to the end of the file"], EN) == []
    assert problems([ChangedFile("docs/release notes.md", None, "x")], "", [], EN) == []  # two words: a name


@pytest.mark.parametrize("changed", [
    ChangedFile("calc.py", CALC, None),                       # deleted: git shows it, nothing to parse
    ChangedFile("README.md", "# a\n", "# b\n"),               # not Python
    ChangedFile("broken_before.py", "def (:\n", "x = 1\n"),   # an unparsable base defines nothing
])
def test_what_cannot_be_judged_passes(changed: ChangedFile) -> None:
    assert problems([changed], "Change it", [], EN) == []


def test_czech_feedback() -> None:
    rewritten = ChangedFile("calc.py", CALC, "print(1)\n")
    assert problems([rewritten], "Přidej funkci", [], texts("cs")) == [
        "Z calc.py zmizelo add, což krok nežádal. Zachovej původní obsah a jen přidej nebo uprav, co krok žádá."]


def step(instructions: str, *, expects_changes: bool = True, step_type: StepType = StepType.CODE) -> CodingStep:
    return CodingStep(instructions=instructions, expects_changes=expects_changes, step_type=step_type)


EDIT = step("1. Open calc.py. 2. Add subtract(a, b) after add(). 3. Save the changes to calc.py.")
TEST_AND_COMMIT = step(
    "7. Test the subtract function by running it with some test cases in a Python environment.\n"
    "8. If the subtraction function works correctly, commit the changes to the repository using `git add calc.py` "
    "and `git commit -m 'Add subtract(a, b) function'`. Otherwise, make necessary adjustments and repeat the "
    "testing process.")


#: What the embedded model planned as the second step of "add mul(a, b) to calc.py" (twice, on
#: embedded defaults): the agent changed nothing, the verifier refused every attempt, the run ended
#: in error after the real edit.
AT_THE_KEYBOARD = step(
    "7. Open a terminal or command prompt.\n"
    "8. Navigate to the directory where calc.py is located.\n"
    "9. Run the following command to test the mul function:\n"
    "   python -m unittest discover\n"
    "10. If the tests pass, commit the changes to the repository using the following commands:\n"
    "    git add calc.py\n"
    "    git commit -m 'Implement mul function in calc.py'\n"
    "11. Push the changes to the remote repository using the following command:\n"
    "    git push origin main")


@pytest.mark.parametrize("instructions", [
    TEST_AND_COMMIT.instructions,
    "Run the tests.",
    "Commit and push the changes.",
    "Otestuj funkci subtract. Pokud funguje, commitni změny.",
    "Finally verify that the tests pass.",
    AT_THE_KEYBOARD.instructions,
    "Navigate to the project directory.",
    "Otevři terminál. Přejdi do adresáře s calc.py. Spusť python calc.py.",
    "Open a terminal or command prompt. Run `python -c \"from calc import mul; print(mul(2, 3))\"` to check it.",
])
def test_steps_that_only_test_or_commit_are_the_orchestrators(instructions: str) -> None:
    assert is_orchestrator_duty(step(instructions))


@pytest.mark.parametrize("instructions", [
    EDIT.instructions,
    "Add a test for subtract to test_calc.py.",       # writing a test is work
    "Fix the commit message parser in git_log.py.",   # about commits, not committing
    "Run the linter and fix what it reports.",        # 'fix' is work
    "Save the file.",                                 # names no duty
    "Open a terminal and fix the failing import in calc.py.",  # names a change to make
    "Navigate to the directory src/ and add mul() to calc.py.",
    "Open the terminal module terminal.py and add a resize handler.",
    "Make the function return a * b.",
    "Python 3.12 added a new syntax; update parse.py to accept it.",
])
def test_steps_that_do_work_are_kept(instructions: str) -> None:
    assert not is_orchestrator_duty(step(instructions))


def test_duties_are_dropped_only_while_a_changing_step_remains() -> None:
    assert without_orchestrator_duties([EDIT, TEST_AND_COMMIT]) == [EDIT]
    assert without_orchestrator_duties([EDIT, AT_THE_KEYBOARD]) == [EDIT]
    assert without_orchestrator_duties([AT_THE_KEYBOARD]) == [AT_THE_KEYBOARD]
    assert without_orchestrator_duties([TEST_AND_COMMIT]) == [TEST_AND_COMMIT]  # never an empty plan
    inspect = step("Run the tests and report which fail.", expects_changes=False)
    assert without_orchestrator_duties([inspect, TEST_AND_COMMIT]) == [inspect, TEST_AND_COMMIT]
    respond = step("Test the idea.", step_type=StepType.RESPOND)
    assert not is_orchestrator_duty(respond)


def edit(instructions: str, files: list[str] | None = None) -> CodingStep:
    return CodingStep(instructions=instructions, files=["calc.py"] if files is None else files)


def test_recipe_lines_on_one_file_become_one_step() -> None:
    """Seen on the embedded model for a Czech request: four steps for one function."""
    recipe = [edit("1. Open calc.py."), edit("2. Add a new function called multiply that takes a and b."),
              edit("3. Return the product a * b."), edit("4. Save the file.")]
    [merged] = cleaned_steps(recipe)
    assert merged.instructions == ("1. Open calc.py.\n2. Add a new function called multiply that takes a and b.\n"
                                   "3. Return the product a * b.\n4. Save the file.")
    assert merged.files == ["calc.py"]


def test_steps_on_other_files_detailed_steps_and_inspections_stay_apart() -> None:
    tests = edit("Add a test for multiply.", ["test_calc.py"])
    detailed = edit("Refactor the parser: " + "x" * 400)
    inspect = CodingStep(instructions="Read calc.py and list its functions.", files=["calc.py"], expects_changes=False)
    steps = [edit("Add multiply."), tests, edit("Document multiply."), detailed, inspect, edit("Add divide.")]
    assert cleaned_steps(steps) == steps
    assert cleaned_steps([edit("Add multiply."), TEST_AND_COMMIT]) == [edit("Add multiply.")]


@pytest.mark.parametrize(("path", "judged_"), [
    ("calc.py", True), ("pkg/mod.py", True), ("2. Add the following code", True),
    ("README.md", False), ("docs/release notes.md", False), ("data/big.json", False),
])
def test_only_paths_the_check_can_fail_are_read(path: str, judged_: bool) -> None:
    assert judged(path) is judged_


def test_a_dropped_step_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="app.graph.rules.step_cleanup"):
        assert cleaned_steps([EDIT, AT_THE_KEYBOARD]) == [EDIT]
    assert "dropped 1 of 2 steps" in caplog.text


# --- passing without doing the work --------------------------------------------------------------

TEST_FILE = "import unittest\nfrom leap import leap_year\n\n\nclass T(unittest.TestCase):\n    def test_2000(self):\n" \
            "        self.assertTrue(leap_year(2000))\n"
REQUEST = "Implement leap_year() in leap.py so that the tests in test_leap.py pass. Do not change test_leap.py."


def test_a_step_that_edits_the_tests_it_was_not_asked_to_change_fails() -> None:
    weakened = ChangedFile("test_leap.py", TEST_FILE, TEST_FILE.replace("assertTrue", "assertFalse"))
    [problem] = problems([weakened], REQUEST, ["leap.py"], EN)
    assert problem.startswith("The step changed tests it was not asked to change: test_leap.py.")
    deleted = ChangedFile("tests/test_leap.py", TEST_FILE, None)
    assert problems([deleted], REQUEST, ["leap.py"], EN) != []


def test_a_step_asked_to_change_tests_may_change_them() -> None:
    extended = ChangedFile("test_leap.py", TEST_FILE, TEST_FILE + "\n    def test_1900(self):\n        pass\n")
    assert problems([extended], "Add tests for 1900 to test_leap.py", ["test_leap.py"], EN) == []
    new_test = ChangedFile("test_calc.py", None, "def test_add():\n    assert True\n")
    assert problems([new_test], REQUEST, ["leap.py"], EN) == []  # a new test file changes no existing test


@pytest.mark.parametrize("path", ["path/to/filename.js", "filename.py", "src/<module>.py", "your_file.py",
                                  "path/to/calc.py"])
def test_a_created_format_example_nobody_asked_for_fails(path: str) -> None:
    [problem] = problems([ChangedFile(path, None, "x = 1\n")], REQUEST, ["leap.py"], EN)
    assert problem == (f"A file nobody asked for that looks like a format example was created: {path}. "
                       "Write the change into the file the step is about.")
    assert judged(path)


def test_a_file_asked_for_but_written_under_a_format_examples_folder_fails() -> None:
    """The embedded model asked to create report.py wrote calc/path/to/report.py."""
    misplaced = ChangedFile("calc/path/to/report.py", None, "x = 1\n")
    [problem] = problems([misplaced], "Create report.py that imports stats", ["report.py"], EN)
    assert problem.startswith("A file nobody asked for that looks like a format example was created: calc/path/to/")
    assert problems([misplaced], "Create calc/path/to/report.py", [], EN) == []  # the exact path asked for


def test_a_placeholder_like_name_the_request_asks_for_passes() -> None:
    asked = ChangedFile("example_file.py", None, "x = 1\n")
    assert problems([asked], "Create example_file.py with x = 1", [], EN) == []


DARTS_TEST = "import unittest\n\nfrom darts import score\n\n\nclass DartsTest(unittest.TestCase):\n    pass\n"


def test_a_name_other_code_imports_must_stay_defined() -> None:
    renamed = ChangedFile("darts.py", DARTS, "def calculate_score(x, y):\n    return 0\n")
    importers = {"darts_test.py": DARTS_TEST, "darts.py": renamed.after or ""}
    assert broken_imports([renamed], importers, EN) == [
        "darts_test.py imports score from darts.py, which no longer defines it. Keep the names other code imports."]
    aliased = ChangedFile("darts.py", DARTS, "from scoring import calculate_score as score\n")
    assigned = ChangedFile("darts.py", DARTS, "try:\n    score = max\nexcept ImportError:\n    pass\n")
    star = ChangedFile("darts.py", DARTS, "from scoring import *\n")
    for kept in (aliased, assigned, star):
        assert broken_imports([kept], importers, EN) == []


def test_imports_are_matched_to_the_module_they_reach() -> None:
    changed = ChangedFile("src/pkg/utils.py", "def helper():\n    pass\n", "def other():\n    pass\n")
    importers = {
        "tests/test_pkg.py": "from pkg.utils import helper\n",  # src layout: reaches the changed module
        "tests/test_local.py": "from utils import helper\n",  # tests/utils.py, another module
        "src/pkg/beside.py": "from utils import helper\nfrom . import utils\n",  # beside it: the same module
    }
    assert broken_imports([changed], importers, EN) == [
        "tests/test_pkg.py imports helper from src/pkg/utils.py, which no longer defines it. Keep the names other "
        "code imports.",
        "src/pkg/beside.py imports helper from src/pkg/utils.py, which no longer defines it. Keep the names other "
        "code imports."]
