"""Orchestrator state (app/graph/state.py): the step-results reducer and the reducer table,
plus the strict `Classification` model intake validates against."""

from __future__ import annotations

import operator
from typing import Any, get_args, get_origin, get_type_hints

import pytest
from pydantic import BaseModel, ValidationError

from app.graph import state_parts
from app.graph.state import merge_results, reducers
from app.llm.budget import BudgetLimits
from app.schemas.domain import (
    ApprovalDecision,
    Classification,
    CodingStep,
    CodingTask,
    Evaluation,
    EvaluationCheck,
    EvidencePack,
    Goal,
    GoalSummary,
    Recovery,
    StepResult,
    TrackerOperation,
)
from app.schemas.kotlin import ChatHistoryMessage, ChatHistoryPayload, ChatSummaryBlock, ProjectRules


def _result(step: int, attempt: int = 1, *, goal: int = 0, revision: int = 0, success: bool = True) -> dict[str, Any]:
    return {"goal_index": goal, "step_index": step, "revision": revision, "attempt": attempt, "success": success}


def test_merge_results_appends_when_the_attempts_are_new() -> None:
    left = [_result(0)]
    right = [_result(0, 2), _result(1), _result(1, goal=1), _result(1, revision=1)]
    assert merge_results(left, right) == left + right


def test_merge_results_replaces_in_place_when_the_attempt_is_already_listed() -> None:
    left = [_result(0), _result(1, success=True), _result(2)]
    verdict = _result(1, success=False) | {"summary": "tests failed"}
    assert merge_results(left, [verdict]) == [_result(0), verdict, _result(2)]


def test_merge_results_uses_defaults_for_the_key_when_goal_revision_and_attempt_are_missing() -> None:
    merged = merge_results([{"step_index": 0, "success": True}], [_result(0, success=False)])
    assert merged == [_result(0, success=False)]


def test_merge_results_replaces_a_result_added_in_the_same_update_when_it_repeats() -> None:
    assert merge_results([], [_result(0), _result(0, success=False)]) == [_result(0, success=False)]


@pytest.mark.parametrize(
    ("left", "right"), [(None, None), ([], None), (None, [])], ids=["both-none", "right-none", "left-none"],
)
def test_merge_results_returns_an_empty_list_when_nothing_is_given(left: Any, right: Any) -> None:
    assert merge_results(left, right) == []


def test_merge_results_leaves_its_inputs_unchanged_when_it_merges() -> None:
    left, right = [_result(0)], [_result(0, success=False)]
    merge_results(left, right)
    assert left == [_result(0)] and right == [_result(0, success=False)]


def test_reducers_name_exactly_the_annotated_keys_when_read_from_the_state() -> None:
    table = reducers()
    assert set(table) == {"step_results", "goal_summaries", "failures", "skipped", "warnings", "user_conditions",
                          "wave_goals"}
    assert table["step_results"] is merge_results
    assert all(table[key] is operator.add for key in set(table) - {"step_results"})


@pytest.mark.parametrize(
    "answer",
    [{}, {"task_category": "single_task"}, {"task_action": "code"}, {"task_category": "advice", "task_action": "fly"}],
    ids=["empty", "action-missing", "category-missing", "unknown-action"],
)
def test_classification_rejects_the_answer_when_category_or_action_is_missing_or_unknown(
    answer: dict[str, Any],
) -> None:
    with pytest.raises(ValidationError):
        Classification.model_validate(answer)


@pytest.mark.parametrize(
    "answer",
    [{"task_category": "single_task", "task_action": "code"}, {"category": "single_task", "action": "code"},
     {"taskCategory": " Single_Task ", "taskAction": "CODE"}],
    ids=["spec-keys", "misnamed-keys", "camel-case-and-folded"],
)
def test_classification_accepts_the_answer_when_keys_are_exact_or_misnamed(answer: dict[str, Any]) -> None:
    classification = Classification.model_validate(answer)
    assert (classification.task_category, classification.task_action) == ("single_task", "code")


_MIRRORS = [
    (state_parts.TaskDict, CodingTask), (state_parts.RulesDict, ProjectRules),
    (state_parts.ChatHistoryDict, ChatHistoryPayload), (state_parts.ChatMessageDict, ChatHistoryMessage),
    (state_parts.ChatSummaryDict, ChatSummaryBlock), (state_parts.BudgetLimitsDict, BudgetLimits),
    (state_parts.EvidencePackDict, EvidencePack), (state_parts.GoalDict, Goal), (state_parts.StepDict, CodingStep),
    (state_parts.TrackerOperationDict, TrackerOperation), (state_parts.StepResultDict, StepResult),
    (state_parts.EvaluationDict, Evaluation), (state_parts.EvaluationCheckDict, EvaluationCheck),
    (state_parts.RecoveryDict, Recovery), (state_parts.GoalSummaryDict, GoalSummary),
]


@pytest.mark.parametrize(("shape", "model"), _MIRRORS, ids=lambda v: v.__name__)
def test_each_state_shape_has_exactly_the_keys_of_its_models_dump(shape: type, model: type[BaseModel]) -> None:
    assert set(get_type_hints(shape)) == set(model.model_fields)


def test_commit_approval_is_an_approval_decision_plus_its_branch() -> None:
    assert set(get_type_hints(state_parts.CommitApprovalDict)) == set(ApprovalDecision.model_fields) | {"branch"}


def test_every_state_key_is_typed_precisely_and_documented() -> None:
    """No bare `dict`/`list`/`Any` in the state, and a docstring under every key saying who writes and reads it."""
    import ast
    import inspect

    from app.graph import state

    def loose(hint: Any) -> bool:
        if hint in (dict, list, Any):
            return True
        args = get_args(hint)
        return (get_origin(hint) is dict and args[-1] is Any) or any(loose(arg) for arg in args)

    hints = get_type_hints(state.OrchestratorState)
    assert [key for key, hint in hints.items() if loose(hint)] == ["environment"]  # Kotlin's free-form object
    tree = ast.parse(inspect.getsource(state))
    undocumented = []
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.startswith("Orchestrator")):
        body = cls.body
        for i, item in enumerate(body):
            if isinstance(item, ast.AnnAssign):
                nxt = body[i + 1] if i + 1 < len(body) else None
                if not (isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)):
                    undocumented.append(item.target.id)  # type: ignore[attr-defined]
    assert undocumented == []
