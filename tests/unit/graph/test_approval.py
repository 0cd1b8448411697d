"""Reading the user's answer to an interrupt (app/graph/approval.py), Czech and English."""

from __future__ import annotations

from typing import Any

import pytest

from app.graph.approval import answer_text, is_approved, is_refusal

REFUSALS = ["neschvaluji", "Neschvaluji to", "ne", "NE!", "nesouhlasím", "zamítám", "nechci", "no", "don't",
            "do not commit", "reject", "cancel"]
NOT_REFUSALS = ["ano", "ano, commitni to", "schvaluji", "yes", "approve", "ok", "approve, no problem", "jo"]


@pytest.mark.parametrize("phrase", REFUSALS)
def test_is_refusal_is_true_when_the_user_says_no(phrase: str) -> None:
    assert is_refusal(phrase) is True


@pytest.mark.parametrize("phrase", NOT_REFUSALS)
def test_is_refusal_is_false_when_the_user_agrees(phrase: str) -> None:
    assert is_refusal(phrase) is False


@pytest.mark.parametrize("reason", [None, ""])
def test_is_refusal_is_false_when_there_is_no_text(reason: str | None) -> None:
    assert is_refusal(reason) is False


@pytest.mark.parametrize("phrase", ["don’t commit", "I don’t approve this"])
def test_is_refusal_is_true_when_negation_uses_a_typographic_apostrophe(phrase: str) -> None:
    # Phones and macOS turn ' into ’ automatically; Kotlin still marks "…approve…" as approved.
    assert is_refusal(phrase) is True


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        ({"approved": True, "reason": "neschvaluji"}, False),  # Kotlin's substring test says "schval" → true
        ({"approved": True, "reason": "ano, commitni to"}, True),
        ({"approved": True, "reason": None, "modification": None}, True),
        ({"approved": False, "reason": "ano"}, False),
        ({"approved": False, "reason": None}, False),
        ({"reason": "ano"}, False),
        (True, True),
        (False, False),
        ("ano", True),
        ("ne", False),
        (None, False),
    ],
    ids=["refusal-text-wins-over-flag", "approved", "approved-without-text", "flag-false", "flag-false-no-text",
         "flag-missing", "bare-true", "bare-false", "bare-yes-text", "bare-no-text", "none"],
)
def test_is_approved_needs_the_flag_and_no_refusal_in_the_text(decision: Any, expected: bool) -> None:
    assert is_approved(decision) is expected


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        ({"approved": True, "reason": "Použij PostgreSQL", "modification": None}, "Použij PostgreSQL"),
        ({"approved": True, "reason": None, "modification": "jen backend"}, "jen backend"),
        ({"approved": True, "reason": "", "modification": ""}, ""),
        ({"approved": True}, ""),
        ("plain text", "plain text"),
        (None, ""),
    ],
    ids=["reason", "modification-fallback", "both-empty", "keys-missing", "string", "none"],
)
def test_answer_text_returns_the_users_words(decision: Any, expected: str) -> None:
    assert answer_text(decision) == expected
