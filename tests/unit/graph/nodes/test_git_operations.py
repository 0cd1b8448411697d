"""Branch names, commit messages and the user's branch rules from project rules
(app/graph/nodes/git_operations.py)."""

from __future__ import annotations

import pytest

from app.graph.nodes.git_operations import apply_branch_rule, branch_name, commit_message, commit_title
from app.graph.rules.approval import Modification
from app.schemas.kotlin import ProjectRules
from app.texts import CS, EN, Texts

TASK = "67ad0f1e2b3c4d5e6f708192"


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ({}, f"task/{TASK}"),
        (ProjectRules().model_dump(), f"task/{TASK}"),
        ({"branch_naming": "fix/{taskId}"}, f"fix/{TASK}"),
        ({"branch_naming": "jervis/{taskId}/{taskId}"}, f"jervis/{TASK}/{TASK}"),
        ({"branch_naming": "feature/static"}, "feature/static"),
    ],
    ids=["defaults", "kotlin-defaults", "custom", "repeated-placeholder", "no-placeholder"],
)
def test_branch_name_fills_task_id_into_the_rule(rules: dict[str, str], expected: str) -> None:
    assert branch_name(rules, TASK) == expected


@pytest.mark.parametrize(
    ("rules", "title", "expected"),
    [
        ({}, "Endpoint /health", f"task({TASK}): Endpoint /health"),
        ({"commit_prefix": "[{taskId}]"}, "Fix", f"[{TASK}] Fix"),
        ({"commit_prefix": ""}, "Only title", "Only title"),
        ({}, "", f"task({TASK}):"),
    ],
    ids=["default-prefix", "custom-prefix", "empty-prefix", "empty-title"],
)
def test_commit_message_prefixes_the_title(rules: dict[str, str], title: str, expected: str) -> None:
    assert commit_message(rules, TASK, title) == expected


def test_commit_message_is_capped_at_200_characters() -> None:
    message = commit_message({}, TASK, "x" * 500)
    assert len(message) == 200 and message.startswith(f"task({TASK}): x")


@pytest.mark.parametrize(("t", "not_allowed", "no_other"), [
    (EN, "branch 'main' is not among the allowed branches; used 'task/x'", "no allowed branch other than 'task/x'"),
    (CS, "větev 'main' není mezi povolenými větvemi; použita 'task/x'",
     "žádná povolená větev kromě 'task/x'"),
], ids=["en", "cs"])
def test_a_branch_rule_that_cannot_be_followed_is_reported_in_the_runs_language(t: Texts, not_allowed: str,
                                                                               no_other: str) -> None:
    rules = {"allowed_branches": ["task/x"]}
    to_main = Modification(kind="branch", text="do mainu", target_branch="main")
    not_task = Modification(kind="branch", text="ne do task", forbidden_branch="task/x")
    assert apply_branch_rule("task/x", to_main, rules, TASK, t) == ("task/x", not_allowed)
    assert apply_branch_rule("task/x", not_task, rules, TASK, t) == ("task/x", no_other)


@pytest.mark.parametrize(("title", "query", "files", "expected"), [
    ("Add subtract(a, b) to calc.py", "whatever", ["calc.py"], "Add subtract(a, b) to calc.py"),
    # an exercise's instructions start with a heading: the title is its first sentence
    ("# Instructions", "# Instructions\n\nCalculate the points scored in a single toss of a Darts game.", ["darts.py"],
     "Calculate the points scored in a single toss of a Darts game."),
    ("## **Úkol**", "## **Úkol**\n- Přidej funkci `subtract` do calc.py", ["calc.py"],
     "Přidej funkci subtract do calc.py"),
    (None, "# Instructions\n\n", ["a.py", "b.py", "c.py", "d.py"], "Update a.py, b.py, c.py …"),
    ("Fix", "", ["calc.py"], "Update calc.py"),
])
def test_the_commit_title_says_what_changed(title: str | None, query: str, files: list[str], expected: str) -> None:
    assert commit_title(title, query, files) == expected
    assert len(commit_title("word " * 100, "", [])) <= 72
