"""Reading the user's answer to an interrupt (app/graph/rules/approval.py), Czech and English."""

from __future__ import annotations

from typing import Any

import pytest

from app.graph.rules.approval import answer_text, classify_modification, interpret_approval, is_approved, is_refusal
from app.schemas.domain import ApprovalDecision

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
        ({"approved": False, "reason": "ano"}, True),  # the words decide, not the flag
        ({"approved": False, "reason": None}, False),
        ({"reason": "ano"}, True),
        ({"approved": True, "reason": "What did you do yesterday?"}, False),  # Kotlin: "yes" in "yesterday"
        ({"approved": True, "reason": "Jaké je počasí?"}, False),
        ({"approved": True, "reason": "Vypadá to dobře, schvaluji."}, True),  # an explicit yes word, not at the head
        ({"approved": True, "reason": "Looks fine, I approve it"}, True),
        ({"approved": True, "reason": "Why would I approve this? Don't."}, False),
        ({"approved": True, "reason": "   "}, True),  # no words: the flag is all there is
        (True, True),
        (False, False),
        ("ano", True),
        ("ne", False),
        ("What did you do yesterday?", False),
        (None, False),
    ],
    ids=["refusal-text-wins-over-flag", "approved", "approved-without-text", "words-yes-flag-false",
         "flag-false-no-text", "flag-missing", "yesterday-is-no-yes", "unrelated-czech", "explicit-yes-word-czech",
         "explicit-yes-word-english", "yes-word-with-refusal", "blank-text-flag", "bare-true", "bare-false",
         "bare-yes-text", "bare-no-text", "bare-unrelated-text", "none"],
)
def test_is_approved_takes_only_a_yes_the_words_give_and_the_flag_only_without_words(decision: Any,
                                                                                     expected: bool) -> None:
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


# --- answers with conditions -----------------------------------------------------------------

def _yes(modification: str | None = None) -> ApprovalDecision:
    return ApprovalDecision(approved=True, modification=modification)


def _no(reason: str | None = None) -> ApprovalDecision:
    return ApprovalDecision(approved=False, reason=reason)


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        ({"approved": True, "reason": "ano, ale ne do mastera"}, _yes("ne do mastera")),
        ({"approved": True, "reason": "Ano, ale přidej testy"}, _yes("přidej testy")),
        ({"approved": True, "reason": "ne, udělej to bez nové závislosti"}, _no("udělej to bez nové závislosti")),
        ({"approved": True, "reason": "ano, commitni to"}, _yes()),
        ({"approved": True, "reason": "ano"}, _yes()),
        ({"approved": True, "reason": "schvaluji"}, _yes()),
        ({"approved": False, "reason": "ok"}, _yes()),
        ({"approved": False, "reason": "jo"}, _yes()),
        ({"approved": True, "reason": "neschvaluji"}, _no()),
        ({"approved": False, "reason": "ne"}, _no()),
        ({"approved": False, "reason": "nechci"}, _no()),
        ({"approved": True, "reason": "yes but not to master"}, _yes("not to master")),
        ({"approved": False, "reason": "no, do it without the new dependency"},
         _no("do it without the new dependency")),
        ({"approved": True, "reason": "no, don't"}, _no()),  # the tail only repeats the no: no reason to replan
        ({"approved": False, "reason": "Ne, nedělej to, prosím"}, _no()),
        ({"approved": False, "reason": "no, don't use requests"}, _no("don't use requests")),
        ({"approved": True, "reason": ""}, _yes()),
        ({"approved": False, "reason": None}, _no()),
        ({"approved": True, "reason": "", "modification": "jen backend"}, _yes("jen backend")),
        ({"approved": True, "reason": "ano", "modification": "jen backend"}, _yes("jen backend")),
        (True, _yes()),
        (False, _no()),
        ("ano, ale přidej testy", _yes("přidej testy")),
        ("ne", _no()),
        (None, _no()),
    ],
    ids=["yes-but-branch", "yes-but-add-step", "no-with-reason", "yes-restated", "ano", "schvaluji",
         "ok-flag-false", "jo-flag-false", "neschvaluji-flag-true", "ne", "nechci", "english-yes-but",
         "english-no-with-reason", "no-dont", "ne-nedelej-to", "no-dont-with-reason", "empty-reason-flag-true",
         "no-reason-flag-false", "kotlin-modification",
         "kotlin-modification-with-yes", "bare-true", "bare-false", "bare-text-yes", "bare-text-no", "none"],
)
def test_interpret_approval_reads_yes_or_no_and_the_condition_when_the_head_says_it(
        decision: Any, expected: ApprovalDecision) -> None:
    assert interpret_approval(decision) == expected


@pytest.mark.parametrize(
    "reason", ["dej to do větve fix/abc", "no problem", "hmm, nevím"], ids=["branch-only", "no-problem", "unsure"],
)
def test_interpret_approval_returns_none_when_the_head_says_neither_yes_nor_no(reason: str) -> None:
    assert interpret_approval({"approved": True, "reason": reason}) is None


@pytest.mark.parametrize(
    ("reason", "expected"),
    [("ne ale udělej to bez nové závislosti", "udělej to bez nové závislosti"),
     ("no but do it without the new dependency", "do it without the new dependency")],
    ids=["czech", "english"],
)
def test_interpret_approval_keeps_the_reason_when_a_refusal_continues_with_but(reason: str, expected: str) -> None:
    assert interpret_approval({"approved": False, "reason": reason}) == _no(expected)


def test_interpret_approval_keeps_the_condition_when_a_yes_is_followed_by_a_comma_and_a_negated_rule() -> None:
    assert interpret_approval({"approved": True, "reason": "ano, ne do mastera"}) == _yes("ne do mastera")


@pytest.mark.parametrize(
    ("text", "forbidden"),
    [("ne do mastera", "master"), ("ne do mainu", "main"), ("not to develop", "develop"),
     ("never into production", "production")],
    ids=["czech-master", "czech-main", "english-develop", "english-never"],
)
def test_classify_modification_names_the_forbidden_branch_when_the_user_rules_one_out(
    text: str, forbidden: str,
) -> None:
    modification = classify_modification(text)
    assert (modification.kind, modification.forbidden_branch, modification.target_branch) == ("branch", forbidden, None)
    assert modification.text == text


@pytest.mark.parametrize(
    ("text", "target"),
    [("do větve Feature/X", "Feature/X"), ("push to branch Release/1.2", "Release/1.2")],
    ids=["czech", "english"],
)
def test_classify_modification_keeps_the_users_case_when_it_names_a_target_branch(text: str, target: str) -> None:
    modification = classify_modification(text)
    assert (modification.kind, modification.target_branch, modification.forbidden_branch) == ("branch", target, None)


@pytest.mark.parametrize(
    ("text", "kind"),
    [("přidej testy", "add_step"), ("a doplň README", "add_step"), ("add a test", "add_step"),
     ("bez nové závislosti", "constraint"), ("only the backend", "constraint"), ("jen backend", "constraint")],
    ids=["pridej", "a-dopln", "add", "bez-zavislosti", "only-backend", "jen-backend"],
)
def test_classify_modification_tells_added_work_from_a_constraint_when_no_branch_is_named(text: str, kind: str) -> None:
    modification = classify_modification(text)
    assert (modification.kind, modification.text) == (kind, text)
    assert modification.forbidden_branch is None and modification.target_branch is None
