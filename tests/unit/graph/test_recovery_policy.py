"""The recovery policy after a failed step (app/graph/rules/failure_recovery.py): `decide`, `read_recovery_answer`,
and the `Reflection` model the LLM's suggestion is parsed into."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from pydantic import ValidationError

from app.graph.rules.failure_recovery import Caps, FailedStep, decide, failure_signature, read_recovery_answer
from app.schemas.domain import RecoveryAction, Reflection

A = RecoveryAction
CAPS = Caps(max_attempts=3, max_replans=2, max_questions=3)
LLM_ACTIONS = [A.RETRY, A.RETRY_MODIFIED, A.REPLANNING, A.ASK_USER, A.SKIP_STEP]


def _step(attempt: int = 1, *, critical: bool = True, **more: Any) -> FailedStep:
    return FailedStep(goal_index=0, step_index=1, attempt=attempt, critical=critical, **more)


def _suggest(action: RecoveryAction, **more: Any) -> Reflection:
    return Reflection(suggested_action=action, **more)


# --- decide ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("attempt", "expected"),
    [(1, A.RETRY), (2, A.ASK_USER), (3, A.ASK_USER)],
    ids=["first-attempt", "second-attempt", "last-attempt"],
)
def test_decide_falls_back_to_retry_then_ask_user_when_there_is_no_suggestion(
        attempt: int, expected: RecoveryAction) -> None:
    decision = decide(None, _step(attempt), CAPS, failure="tests failed")
    assert (decision.action, decision.source) == (expected, "fallback")
    assert (decision.failure, decision.attempt, decision.step_index) == ("tests failed", attempt, 1)
    assert (decision.analysis, decision.hint, decision.confidence) == ("", "", None)


@pytest.mark.parametrize("action", LLM_ACTIONS, ids=[a.value for a in LLM_ACTIONS])
def test_decide_passes_the_llm_action_through_when_it_is_allowed(action: RecoveryAction) -> None:
    decision = decide(_suggest(action), _step(1, critical=False), CAPS, failure="x")
    assert (decision.action, decision.source, decision.note) == (action, "llm", "")


@pytest.mark.parametrize(
    ("attempt", "expected", "source"),
    [(1, A.RETRY_MODIFIED, "llm"), (2, A.RETRY_MODIFIED, "llm"), (3, A.ASK_USER, "cap")],
    ids=["attempts-left", "one-attempt-left", "attempts-used-up"],
)
def test_decide_refuses_skip_step_when_the_step_is_critical(
    attempt: int, expected: RecoveryAction, source: str,
) -> None:
    decision = decide(_suggest(A.SKIP_STEP), _step(attempt, critical=True), CAPS, failure="x")
    assert (decision.action, decision.source) == (expected, source)
    assert "critical" in decision.note


@pytest.mark.parametrize(
    ("attempt", "expected"),
    [(1, A.RETRY_MODIFIED), (3, A.ASK_USER)],
    ids=["attempts-left", "attempts-used-up"],
)
def test_decide_refuses_replanning_when_the_replan_cap_is_reached(attempt: int, expected: RecoveryAction) -> None:
    decision = decide(_suggest(A.REPLANNING), _step(attempt, replans=2), CAPS, failure="x")
    assert decision.action == expected
    assert "replanning refused" in decision.note


@pytest.mark.parametrize("action", [A.RETRY, A.RETRY_MODIFIED], ids=["retry", "retry-modified"])
def test_decide_asks_the_user_when_a_retry_would_pass_the_attempt_cap(action: RecoveryAction) -> None:
    decision = decide(_suggest(action), _step(3), CAPS, failure="x")
    assert (decision.action, decision.source) == (A.ASK_USER, "cap")
    assert "3 attempt(s) used" in decision.note


@pytest.mark.parametrize(
    ("attempt", "extra", "expected"),
    [(3, 1, A.RETRY), (4, 1, A.STOP), (4, 2, A.RETRY)],
    ids=["granted-one-more", "granted-one-used-already-asked", "granted-two"],
)
def test_decide_extends_the_attempt_cap_when_the_user_granted_extra_attempts(
        attempt: int, extra: int, expected: RecoveryAction) -> None:
    decision = decide(_suggest(A.RETRY), _step(attempt, extra_attempts=extra, cap_asked=True), CAPS, failure="x")
    assert decision.action == expected


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (_step(3, cap_asked=True), A.STOP),
        (_step(4, cap_asked=True, extra_attempts=1), A.STOP),
        (_step(3, cap_asked=True, extra_attempts=1), A.ASK_USER),
        (_step(3, cap_asked=False), A.ASK_USER),
    ],
    ids=["asked-and-used-up", "asked-extra-used-up", "asked-but-extra-left", "not-asked-yet"],
)
def test_decide_stops_when_the_exhausted_step_was_already_asked_about(
    step: FailedStep, expected: RecoveryAction,
) -> None:
    decision = decide(_suggest(A.ASK_USER), step, CAPS, failure="x")
    assert decision.action == expected
    assert decision.source == ("cap" if expected == A.STOP else "llm")


@pytest.mark.parametrize(
    ("questions", "expected"),
    [(2, A.ASK_USER), (3, A.STOP), (4, A.STOP)],
    ids=["below-cap", "at-cap", "past-cap"],
)
def test_decide_stops_when_the_question_cap_is_reached(questions: int, expected: RecoveryAction) -> None:
    decision = decide(_suggest(A.ASK_USER), _step(1, questions=questions), CAPS, failure="x")
    assert decision.action == expected
    if expected == A.STOP:
        assert (decision.source, decision.note) == ("cap", "3 question(s) asked")


def test_decide_carries_the_suggestions_reasoning_when_it_decides() -> None:
    suggestion = _suggest(A.RETRY_MODIFIED, analysis="import fails", root_cause="missing numpy",
                          modification_hint="add numpy to requirements", confidence=0.8)
    decision = decide(suggestion, _step(1), CAPS, failure="ImportError")
    assert (decision.analysis, decision.root_cause, decision.hint, decision.confidence) == (
        "import fails", "missing numpy", "add numpy to requirements", 0.8)


def test_decide_never_breaks_a_cap_when_any_combination_fails() -> None:
    for action, attempt, critical, replans, questions, cap_asked, extra in itertools.product(
            [None, *LLM_ACTIONS], range(1, 6), [True, False], range(4), range(5), [True, False], [0, 1]):
        step = _step(attempt, critical=critical, replans=replans, questions=questions, cap_asked=cap_asked,
                     extra_attempts=extra)
        decision = decide(_suggest(action) if action else None, step, CAPS, failure="x")
        case = f"{action} attempt={attempt} critical={critical} replans={replans} q={questions} asked={cap_asked}"
        if not step.attempts_left(CAPS):
            assert decision.action not in (A.RETRY, A.RETRY_MODIFIED), case
        if critical:
            assert decision.action != A.SKIP_STEP, case
        if replans >= CAPS.max_replans:
            assert decision.action != A.REPLANNING, case
        if questions >= CAPS.max_questions:
            assert decision.action != A.ASK_USER, case


# --- read_recovery_answer --------------------------------------------------------------------

@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("stop", (A.STOP, "")),
        ("zastav", (A.STOP, "")),
        ("ukonči to", (A.STOP, "")),
        ("přeskoč", (A.SKIP_STEP, "")),
        ("vynech ten krok", (A.SKIP_STEP, "")),
        ("skip", (A.SKIP_STEP, "")),
        ("přeplánuj", (A.REPLANNING, "")),
        ("replan", (A.REPLANNING, "")),
        ("zkus znovu", (A.RETRY, "")),
        ("zkus to znovu: použij numpy", (A.RETRY, "použij numpy")),
        ("try again with fixtures", (A.RETRY, "with fixtures")),
        ("preskoc", (A.SKIP_STEP, "")),
        ("ZASTAV", (A.STOP, "")),
        ("ano", (A.RETRY, "")),  # the embedded model read a bare "ano" as stop
        ("Yes!", (A.RETRY, "")),
        ("ano, přeskoč to", (A.SKIP_STEP, "")),  # a yes with an action is that action
    ],
    ids=["stop", "zastav", "ukonci", "preskoc", "vynech", "skip", "preplanuj", "replan", "zkus-znovu",
         "retry-with-czech-hint", "retry-with-english-hint", "without-diacritics", "upper-case", "bare-ano",
         "bare-yes", "yes-with-skip"],
)
def test_read_recovery_answer_reads_the_action_when_a_keyword_says_it(
        answer: str, expected: tuple[RecoveryAction, str]) -> None:
    assert read_recovery_answer(answer) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("přeskoč, nebo zkus znovu", A.SKIP_STEP),
        ("zkus znovu, jinak přeskoč", A.RETRY),
        ("přeplánuj to, nebo stop", A.REPLANNING),
    ],
    ids=["skip-first", "retry-first", "replan-first"],
)
def test_read_recovery_answer_takes_the_earliest_keyword_when_several_appear(
        answer: str, expected: RecoveryAction) -> None:
    result = read_recovery_answer(answer)
    assert result is not None and result[0] == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("ne, nepřeskakuj", None),
        ("ne, nepřeskakuj, zkus znovu", (A.RETRY, "")),
        ("don't skip, try again", (A.RETRY, "")),
        ("do not stop, retry", (A.RETRY, "")),
    ],
    ids=["czech-negated-skip", "czech-negated-skip-then-retry", "english-dont", "english-do-not"],
)
def test_read_recovery_answer_ignores_a_keyword_when_it_is_negated(
        answer: str, expected: tuple[RecoveryAction, str] | None) -> None:
    assert read_recovery_answer(answer) == expected


def test_read_recovery_answer_ignores_a_keyword_when_negated_with_a_typographic_apostrophe() -> None:
    assert read_recovery_answer("don\u2019t skip, try again") == (A.RETRY, "")


def test_read_recovery_answer_ignores_a_retry_when_the_czech_verb_is_negated() -> None:
    assert read_recovery_answer("nezkoušej to znovu, přeskoč") == (A.SKIP_STEP, "")


@pytest.mark.parametrize(
    "answer", ["přeskoč, použij numpy", "stop, it is hopeless", "replan: split the step"],
    ids=["skip", "stop", "replan"],
)
def test_read_recovery_answer_drops_the_hint_when_the_action_is_not_a_retry(answer: str) -> None:
    result = read_recovery_answer(answer)
    assert result is not None and result[1] == ""


@pytest.mark.parametrize("answer", ["", "hmm", "nevím", "use numpy instead"],
                         ids=["empty", "hmm", "nevim", "hint-only"])
def test_read_recovery_answer_returns_none_when_no_keyword_says_it(answer: str) -> None:
    assert read_recovery_answer(answer) is None


# --- Reflection ------------------------------------------------------------------------------

def test_reflection_parses_the_spec_keys_when_they_are_exact() -> None:
    reflection = Reflection.model_validate({
        "analysis": "a", "root_cause": "b", "suggested_action": "retry_modified", "confidence": 0.7,
        "modification_hint": "c", "extra": "ignored"})
    assert reflection.model_dump() == {"analysis": "a", "root_cause": "b", "suggested_action": "retry_modified",
                                       "confidence": 0.7, "modification_hint": "c"}


@pytest.mark.parametrize(
    ("confidence", "expected"),
    [(0.3, 0.3), ("0.9", 0.9), (1.7, 1.0), (-0.2, 0.0), ("high", 0.5), (None, 0.5), ([1], 0.5)],
    ids=["plain", "string", "above-one", "negative", "word", "none", "list"],
)
def test_reflection_clamps_confidence_when_it_is_out_of_range_or_garbage(confidence: Any, expected: float) -> None:
    assert Reflection.model_validate({"suggested_action": "retry", "confidence": confidence}).confidence == expected


@pytest.mark.parametrize(
    "answer",
    [{"suggested_action": "stop"}, {"suggested_action": "STOP"}, {"suggested_action": "abort"},
     {"suggested_action": ""}, {"suggested_action": None}, {"analysis": "a"}],
    ids=["stop", "stop-upper", "unknown", "empty", "none", "missing"],
)
def test_reflection_rejects_the_action_when_it_is_stop_unknown_or_missing(answer: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Reflection.model_validate(answer)


@pytest.mark.parametrize(
    ("action", "expected"),
    [("RETRY", "retry"), ("  Skip_Step ", "skip_step"), ("Ask_User\n", "ask_user")],
    ids=["upper", "padded", "newline"],
)
def test_reflection_folds_the_action_when_it_is_upper_case_or_padded(action: str, expected: str) -> None:
    assert Reflection.model_validate({"suggested_action": action}).suggested_action == expected


# --- early failures and repeated ones ---------------------------------------------------------

def test_an_early_failure_without_a_reflection_is_retried_with_the_failure_by_rule() -> None:
    decision = decide(None, _step(1), CAPS, failure="Tests failed", reflected=False)
    assert (decision.action, decision.source, decision.hint) == (A.RETRY, "rule", "")
    second = decide(None, _step(2), CAPS, failure="Tests failed", reflected=False)
    assert second.action == A.RETRY  # not asked yet: no reflection was made


def test_the_same_failure_again_changes_the_approach_then_asks() -> None:
    again = decide(_suggest(A.RETRY, modification_hint="check 1900"), _step(2, repeats=1), CAPS, failure="x",
                   repeat_hint="Take another approach.")
    assert again.action == A.RETRY_MODIFIED
    assert again.hint == "Take another approach. check 1900" and "same failure" in again.note
    third = decide(None, _step(3, repeats=2, extra_attempts=1), CAPS, failure="x", reflected=False)
    assert third.action == A.ASK_USER and "the same failure 3 times" in third.note


def test_a_repeated_failure_keeps_a_skip_or_replan_suggestion() -> None:
    decision = decide(_suggest(A.REPLANNING), _step(2, repeats=1), CAPS, failure="x")
    assert decision.action == A.REPLANNING


def test_failure_signature_ignores_timings_and_tells_changes_apart() -> None:
    first = failure_signature("Ran 8 tests in 0.012s\nFAILED (failures=1)", "+def leap(y): return y % 4 == 0")
    assert first == failure_signature("Ran 8 tests in 0.340s\nFAILED (failures=1)", "+def leap(y): return y % 4 == 0")
    assert first != failure_signature("Ran 8 tests in 0.012s\nFAILED (failures=1)", "+def leap(y): return True")
