"""Prompts of the correction agent. Each system prompt starts with `### JERVIS NODE: <name>`
(as app/graph/prompts.py), which keeps logs readable and lets the scripted test LLM answer
per call. The system prompt (instructions + rules) is the same for every chunk of a transcript,
so the model server can reuse its prompt cache between chunks."""

from __future__ import annotations

import json
from collections.abc import Sequence

from app.correction.rules import CorrectionRule, format_rules
from app.llm.provider import Message
from app.schemas.correction import CorrectionSegment

CORRECT_NODE = "correction"
TARGETED_NODE = "correction-targeted"
INSTRUCT_NODE = "correction-instruct"

_BASICS = (
    "You correct automatic speech-to-text (Whisper) transcripts of meetings. The audio is mostly "
    "Czech or Slovak with English technical terms; Whisper mishears names, companies, terms and "
    "abbreviations, and splits or merges words. For each segment work out what the speaker meant "
    "from the sound of the words and the context, and write that.\n"
    "- Apply every correction rule below; they are verified spellings from the user's domain.\n"
    "- Keep the spoken style; do not formalise, summarise, shorten or translate.\n"
    "- Never merge, split, reorder, add or drop segments; keep each segment's `i`.\n"
)

_CORRECT_SCHEMA = {
    "segments": [{"i": 0, "text": "corrected text of segment 0"}],
    "questions": [{"i": 0, "original": "unclear word", "question": "How is this name spelled?",
                   "options": ["Variant A", "Variant B"]}],
}
_INSTRUCT_SCHEMA = {
    "segments": [{"i": 0, "text": "corrected text of segment 0"}],
    "newRules": [{"original": "wrong spelling", "corrected": "right spelling",
                  "category": "person_name|company_name|department|terminology|abbreviation|general"}],
    "summary": "one sentence: what you changed",
}


def _system(node: str, body: str) -> Message:
    return {"role": "system", "content": f"### JERVIS NODE: {node}\n{body}"}


def _rules_block(rules: Sequence[CorrectionRule]) -> str:
    if not rules:
        return "\nNo correction rules are stored yet: rely on context and phonetics.\n"
    return f"\nCORRECTION RULES (always apply):\n{format_rules(rules)}\n"


def _lines(segments: Sequence[CorrectionSegment]) -> str:
    """One JSON object per line: compact and unambiguous about `i`."""
    return "\n".join(
        json.dumps({"i": s.i, "speaker": s.speaker, "text": s.text} if s.speaker else {"i": s.i, "text": s.text},
                   ensure_ascii=False)
        for s in segments
    )


def _user(sections: Sequence[tuple[str, str]]) -> Message:
    return {"role": "user", "content": "\n\n".join(f"## {title}\n{body}" for title, body in sections if body)}


def correct(
    segments: Sequence[CorrectionSegment],
    rules: Sequence[CorrectionRule],
    *,
    context: Sequence[CorrectionSegment] = (),
    targeted: bool = False,
) -> list[Message]:
    """Correct `segments`; `context` holds neighbouring segments, shown only to be understood."""
    body = (
        _BASICS
        + "- If you cannot tell a proper noun or domain term that no rule covers, give your best guess "
        "AND add a question about it (with the likely spellings as options). Do not ask about common words.\n"
        + ("- These segments were transcribed again; the context segments around them are already "
           "correct and must not be returned.\n" if targeted else "")
        + _rules_block(rules)
        + "\nReply with one JSON object only, no prose, with every segment you were given: "
        + json.dumps(_CORRECT_SCHEMA, ensure_ascii=False)
        + "\nUse an empty questions list when nothing is unclear."
    )
    return [
        _system(TARGETED_NODE if targeted else CORRECT_NODE, body),
        _user([("Neighbouring segments (context only, do not return them)", _lines(context)),
               ("Segments to correct", _lines(segments))]),
    ]


def instruct(segments: Sequence[CorrectionSegment], rules: Sequence[CorrectionRule], instruction: str) -> list[Message]:
    """Apply the user's natural-language instruction; propose reusable rules from it."""
    body = (
        _BASICS
        + "- Apply the user's instruction to every segment it concerns; return the other segments unchanged.\n"
        "- newRules: reusable spelling rules the instruction implies (a name, a company, a term); "
        "an empty list when there are none.\n"
        + _rules_block(rules)
        + "\nReply with one JSON object only, no prose, with every segment you were given: "
        + json.dumps(_INSTRUCT_SCHEMA, ensure_ascii=False)
    )
    return [
        _system(INSTRUCT_NODE, body),
        _user([("User's instruction", instruction.strip()), ("Segments", _lines(segments))]),
    ]


def output_text(segments: Sequence[CorrectionSegment]) -> str:
    """Roughly what the model writes back for `segments` (for the output budget)."""
    return json.dumps([{"i": s.i, "text": s.text} for s in segments], ensure_ascii=False)
