"""The catalogues of user-facing texts: every language says everything, with the same
placeholders, and the language is chosen the same way for runs and corrections."""

from __future__ import annotations

import dataclasses
import string

import pytest

from app.texts import CS, EN, LANGUAGES, Texts, texts
from app.texts.language import choose_language

FIELDS = [field.name for field in dataclasses.fields(Texts)]


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


@pytest.mark.parametrize("code", sorted(LANGUAGES))
def test_every_language_says_everything_with_the_same_placeholders(code: str) -> None:
    catalogue = LANGUAGES[code]
    for name in FIELDS:
        text = getattr(catalogue, name)
        assert isinstance(text, str) and text.strip(), f"{code}.{name} is empty"
        assert placeholders(text) == placeholders(getattr(EN, name)), f"{code}.{name}: placeholders differ from en"


def test_every_template_formats_with_its_placeholders() -> None:
    """No stray brace or positional field: each template formats with its own names."""
    for code, catalogue in LANGUAGES.items():
        for name in FIELDS:
            text = getattr(catalogue, name)
            assert "{" not in text.format(**dict.fromkeys(placeholders(text), "x")), f"{code}.{name}"


@pytest.mark.parametrize(("code", "expected"), [("cs", CS), ("CS", CS), ("cs-CZ", CS), ("en", EN), ("de", EN),
                                                ("", EN), (None, EN)])
def test_a_code_picks_its_catalogue_or_english(code: str | None, expected: Texts) -> None:
    assert texts(code) is expected


@pytest.mark.parametrize(("configured", "sample", "expected"), [
    ("auto", "Explain what the billing module does", "en"),
    ("auto", "Vysvětli, co dělá modul fakturace", "cs"),
    ("auto", "", "cs"),  # says nothing: the default
    ("en", "Vysvětli, co dělá modul fakturace", "en"),  # configured wins
    ("cs", "Explain what the billing module does", "cs"),
])
def test_the_configured_language_or_the_samples_own(configured: str, sample: str, expected: str) -> None:
    assert choose_language(configured, sample) == expected
