"""What the user reads, in the run's language: progress messages, questions, gate descriptions,
report lines, run ends and correction progress. One `Texts` per language (`cs.py`, `en.py`);
`texts(code)` picks it (English for any other code, since the LLM-written parts follow
`language_rule` anyway). Placeholders are `str.format` fields.

Below every layer (graph, runs, correction, llm import it), so no text needs a layer above its user."""

from __future__ import annotations

from app.texts.catalogue import Texts
from app.texts.cs import CS
from app.texts.en import EN

__all__ = ["CS", "EN", "LANGUAGES", "Texts", "texts"]

#: Every language with a catalogue of its own, by code.
LANGUAGES: dict[str, Texts] = {"cs": CS, "en": EN}


def texts(language: str | None) -> Texts:
    """The texts of a language code; English for codes without a catalogue of their own."""
    return LANGUAGES.get((language or "").lower()[:2], EN)
