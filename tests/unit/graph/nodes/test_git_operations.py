"""Branch names and commit messages from project rules (app/graph/nodes/git_operations.py)."""

from __future__ import annotations

import pytest

from app.graph.nodes.git_operations import branch_name, commit_message
from app.schemas.kotlin import ProjectRules

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
