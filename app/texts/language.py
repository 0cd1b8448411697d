"""Which language a text is written in, and so which texts a run or a request gets.

Below every layer that shows text (graph, runs, correction), so each chooses the same way."""

from __future__ import annotations

import re
import unicodedata

_CZECH_LETTERS = re.compile(r"[ěščřžůťďňĚŠČŘŽŮŤĎŇ]")
_CZECH_WORDS = frozenset("""
    a aby ale ano bez by co do i jak je jsem jsou k kde kdy ktery ktera ktere mi muzes na ne nebo neni
    o od po pro proc prosim s se si ta tak te to tu u uz v ve z za ze jen jeste taky tedy
    pridej oprav uprav zmen udelej napis vytvor smaz odstran prejmenuj implementuj refaktoruj doplň dopln
    funkci soubor souboru tridu metodu chybu testy
""".split())
_ENGLISH_WORDS = frozenset("""
    a an and are as be but by can could do does for from how i in into is it make of on or please
    should that the this to was what when where which why will with would you your
    add fix implement change refactor rename remove delete update write create function file class
    method bug tests test
""".split())


APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u00b4": "'", "`": "'"})


def fold(text: str) -> str:
    """Lower case, no diacritics and one kind of apostrophe, so "Přidej" and "pridej", "don’t"
    (as phones type it) and "don't" read the same."""
    decomposed = unicodedata.normalize("NFKD", text.lower().translate(APOSTROPHES))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", fold(text))


def detect_language(text: str, default: str = "en") -> str:
    """"cs" or "en" from letters and common words; `default` when the text says nothing."""
    if _CZECH_LETTERS.search(text):
        return "cs"
    words = _words(text)
    czech = sum(word in _CZECH_WORDS for word in words)
    english = sum(word in _ENGLISH_WORDS for word in words)
    if czech == english:
        return default
    return "cs" if czech > english else "en"


def choose_language(configured: str, sample: str, default: str = "cs") -> str:
    """The configured `response_language`, or (`auto`) the language `sample` is written in,
    `default` when it says nothing."""
    if configured != "auto":
        return configured
    return detect_language(sample, default=default)
