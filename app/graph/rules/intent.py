"""Deterministic reading of a request: whether it asks for a code change or a question (its
language is `app.texts.language`'s to tell).

A small local model misroutes plain code requests ("Add a subtract(a, b) function to calc.py"
came back as advice, answered in Czech). These rules are the floor under the model: they
repair a classification that failed, and overrule "advice" for an imperative code request on a
project that has a workspace. They are deliberately narrow; everything else is the model's call.
"""

from __future__ import annotations

import re

from app.texts.language import fold

#: Verbs that, at the start of a request, ask for a change to the project (folded: no diacritics).
_CODE_VERBS = frozenset("""
    add fix implement change refactor rename remove delete update write create modify replace move
    extract convert migrate introduce rewrite
    pridej oprav implementuj zmen uprav refaktoruj prejmenuj odstran smaz aktualizuj napis vytvor
    nahrad presun dopln predelej prepis zaved
""".split())
_POLITE = frozenset("please prosim pls kindly can could would you muzes mohl mohla bys".split())
#: Something in the project the request names: a file, a call, a code noun.
_CODE_OBJECT = re.compile(
    r"\b[\w./-]+\.[a-z]{1,5}\b|\w+\(|\b(?:function|method|class|endpoint|test|tests|bug|api|module|field|"
    r"funkc\w*|metod\w*|trid\w*|endpoint\w*|test\w*|chyb\w*|modul\w*|pole|atribut\w*)\b",
    re.IGNORECASE,
)
_QUESTION_START = frozenset("""
    what how why when where which who is are can could does do explain describe tell
    co jak proc kdy kde ktery ktera ktere kdo je jsou muze muzes vysvetli popis rekni
""".split())


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", fold(text))


def _leading_verb(text: str) -> str | None:
    """The first word after polite openers ("please", "could you", "prosím")."""
    for word in _words(text)[:6]:
        if word not in _POLITE:
            return word
    return None


def asks_for_code_change(text: str) -> bool:
    """An imperative request to change the project: it starts with a code verb and names
    something in the code ("Add a subtract(a, b) function to calc.py", "Oprav chybu v login.py")."""
    verb = _leading_verb(text)
    return verb in _CODE_VERBS and _CODE_OBJECT.search(text) is not None


def starts_with_code_verb(text: str) -> bool:
    """Weaker than `asks_for_code_change`: only the leading verb (used when the model gave nothing)."""
    return _leading_verb(text) in _CODE_VERBS


def looks_like_question(text: str) -> bool:
    stripped = text.strip()
    return stripped.endswith("?") or _leading_verb(stripped) in _QUESTION_START


def is_plain_question(text: str) -> bool:
    """A question and nothing else: a question word first, a question mark last, and no sentence
    that starts with a code verb ("Jak funguje funkce add v calc.py?" is one; "Why does it fail?
    Fix it." is not)."""
    stripped = text.strip()
    sentences = [s for s in re.split(r"[.!?\n]+", stripped) if s.strip()]
    return (stripped.endswith("?") and _leading_verb(stripped) in _QUESTION_START
            and not any(_leading_verb(sentence) in _CODE_VERBS for sentence in sentences))


#: A request to change tests: a verb that changes something, then (within a few words) tests.
_TEST_CHANGE = re.compile(
    r"\b(?:add|write|update|fix|change|extend|create|modify|adjust|rewrite|correct|edit|remove|delete|cover"
    r"|pridej|napis|uprav|oprav|dopln|vytvor|zmen|rozsir|prepis|odstran|smaz|pokryj)\w*"
    r"(?:\W+\w+){0,4}?\W+(?:unit\s+)?(?:tests?|testy|testu|testech|testum|spec|specs)\b")
_NEGATION = r"\b(?:not|never|don'?t|ne|nikdy|nemen\w*|neuprav\w*|nemaz\w*|nepis\w*|nesahej\w*|nedotykej\w*)\b"
_NEGATION_BEFORE = re.compile(_NEGATION + r"\W+$")
_NEGATION_WITHIN = re.compile(_NEGATION)


def asks_for_test_change(text: str) -> bool:
    """Whether the words ask for tests to be written or changed ("add tests for it", "uprav testy");
    "make the tests pass" and "do not change test_x.py" do not. Without such words a step that
    edits an existing test file has made its tests pass by changing them."""
    folded = fold(text)
    for match in _TEST_CHANGE.finditer(folded):
        if not (_NEGATION_BEFORE.search(folded[max(0, match.start() - 20):match.start()])
                or _NEGATION_WITHIN.search(match.group(0))):
            return True
    return False
