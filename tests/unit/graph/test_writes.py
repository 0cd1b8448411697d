"""A node's update without what it does not change (app/graph/writes.py)."""

from __future__ import annotations

from typing import Any

from langgraph.types import Command

from app.graph.writes import changes, only_changes


def test_values_the_state_already_holds_are_left_out() -> None:
    state = {"attempt": 1, "cap_asked": False, "current_step_index": 2, "recovery": {"action": "retry"}}
    update = {"attempt": 1, "cap_asked": False, "current_step_index": 3, "recovery": None}

    assert changes(state, update) == {"current_step_index": 3, "recovery": None}


def test_empty_values_of_keys_the_state_does_not_hold_are_left_out() -> None:
    update = {"language": "cs", "kb_results": [], "kb_warnings": [], "needs_clarification": False,
              "project_context": "", "evidence_pack": {}, "halt": None, "replans": 0}

    assert changes({}, update) == {"language": "cs", "replans": 0}  # a number is a value, 0 included


def test_an_empty_value_that_clears_what_the_state_holds_is_kept() -> None:
    state = {"clarification_questions": ["Which endpoint?"], "needs_clarification": True, "steps": [{"index": 0}]}
    update = {"clarification_questions": [], "needs_clarification": False, "steps": []}

    assert changes(state, update) == update


def test_appending_keys_drop_only_an_empty_list() -> None:
    state = {"warnings": ["tests not run"], "step_results": []}
    update = {"warnings": ["tests not run"], "step_results": [], "failures": []}

    assert changes(state, update) == {"warnings": ["tests not run"]}  # an append, not a value to compare


async def test_only_changes_wraps_a_node_and_passes_anything_but_a_dict() -> None:
    async def node(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
        return {"final_result": "done", "artifacts": [], "error": None}

    async def commanding(state: dict[str, Any], runtime: Any) -> Command[Any]:
        return Command(goto="finalize")

    assert await only_changes(node)({"error": None}, None) == {"final_result": "done"}  # type: ignore[arg-type]
    assert only_changes(node).__name__ == "node"
    command = await only_changes(commanding)({}, None)  # type: ignore[arg-type]
    assert isinstance(command, Command) and command.goto == "finalize"
