"""Deterministic reading of a request (app/graph/rules/intent.py): language, code change, question."""

from __future__ import annotations

import pytest

from app.graph.rules.intent import asks_for_code_change, asks_for_test_change, looks_like_question
from app.texts.language import detect_language, fold


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Přidej funkci do souboru", "cs"),
        ("Oprav chybu v prihlaseni", "cs"),
        ("Muzes mi to vysvetlit?", "cs"),
        ("Žluťoučký kůň", "cs"),
        ("Add a subtract(a, b) function to calc.py", "en"),
        ("What does this function do?", "en"),
    ],
    ids=["czech-diacritics", "czech-without-diacritics", "czech-question-without-diacritics", "czech-letters-only",
         "english-request", "english-question"],
)
def test_detect_language_tells_czech_from_english_when_the_text_says_it(text: str, expected: str) -> None:
    assert detect_language(text) == expected
    assert detect_language(text, default="de") == expected


@pytest.mark.parametrize("text", ["", "   ", "12345", "calc.py", "ok"], ids=["empty", "blank", "digits", "file", "ok"])
@pytest.mark.parametrize("default", ["en", "cs"])
def test_detect_language_returns_the_default_when_the_text_says_nothing(text: str, default: str) -> None:
    assert detect_language(text, default=default) == default


@pytest.mark.parametrize(
    "text",
    [
        "Add a subtract(a, b) function to calc.py",
        "Please fix the bug in login.py",
        "Přidej endpoint /health do API",
        "Oprav chybu v přihlášení",
        "Could you please add tests for utils.py",
        "Prosím oprav test_login",
    ],
    ids=["add-function", "please-fix", "czech-add-endpoint", "czech-fix-bug", "polite-english", "polite-czech"],
)
def test_asks_for_code_change_is_true_when_a_code_verb_names_something_in_the_code(text: str) -> None:
    assert asks_for_code_change(text) is True


@pytest.mark.parametrize(
    "text",
    ["What does calc.py do?", "Add me to the meeting", "Explain the login flow", "Fix it", ""],
    ids=["question-about-file", "add-without-code-object", "explain", "verb-without-object", "empty"],
)
def test_asks_for_code_change_is_false_when_it_is_a_question_or_names_no_code(text: str) -> None:
    assert asks_for_code_change(text) is False


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What does calc.py do?", True),
        ("Explain the login flow", True),
        ("Jak funguje přihlášení", True),
        ("Proč to padá", True),
        ("prosím vysvětli to", True),
        ("The build fails?", True),
        ("Add a test", False),
        ("Oprav chybu v login.py", False),
        ("   ", False),
    ],
    ids=["what", "explain", "czech-jak", "czech-proc-diacritics", "czech-polite-explain", "question-mark",
         "imperative", "czech-imperative", "blank"],
)
def test_looks_like_question_reads_the_leading_word_or_question_mark(text: str, expected: bool) -> None:
    assert looks_like_question(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"), [("Přidej", "pridej"), ("ŽLUŤOUČKÝ", "zlutoucky"), ("calc.py", "calc.py")],
)
def test_fold_drops_case_and_diacritics_when_it_reads_a_word(text: str, expected: str) -> None:
    assert fold(text) == expected


@pytest.mark.parametrize(("text", "asked"), [
    ("Add tests for subtract()", True),
    ("Přidej testy pro funkci mul", True),
    ("Uprav funkci add a testy", True),
    ("Write a unit test for calc.py", True),
    ("Implement leap_year() in leap.py so that the tests in test_leap.py pass. Do not change test_leap.py.", False),
    ("Make the tests pass", False),
    ("Oprav chybu, neměň testy", False),
    ("Don't touch the tests, fix the code", False),
])
def test_asks_for_test_change_only_when_the_words_ask_to_write_or_change_tests(text: str, asked: bool) -> None:
    assert asks_for_test_change(text) is asked
