"""Reading the user's answer to an interrupt (spec §13).

Kotlin marks an approval as approved when the text merely *contains* "ano", "yes", "approve"
or "schval", so "neschvaluji" arrives as `approved: true`. A reason that is clearly a refusal
therefore wins over the flag.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_REFUSAL = re.compile(
    r"""
    \bne\b | \bnee+\b | \bnikoli\b | \bnesouhlas\w* | \bneschval\w* | \bnepotvrz\w* | \bnepovol\w*
    | \bzamit\w* | \bodmit\w* | \bnechci\b | \bnedelej\w* | \bnecommit\w* | \bnepush\w* | \bnedovol\w*
    | \bzrus\w* | \bstop\b | \bpockej\b
    | \bno\b | \bnope\b | \bnot\s+(?:ok|okay|approved?|now|yet)\b | \bdon'?t\b | \bdo\s+not\b
    | \breject\w* | \bdecline\w* | \bden(?:y|ied)\b | \bdisapprove\w* | \bcancel\w* | \babort\w*
    """,
    re.VERBOSE,
)


_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u00b4": "'", "`": "'"})


def _fold(text: str) -> str:
    """Lower case, no diacritics, one kind of apostrophe (phones type "don’t")."""
    decomposed = unicodedata.normalize("NFKD", text.lower().translate(_APOSTROPHES))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


_NOT_REFUSALS = re.compile(r"\bno\s+(?:problem|worries)\b|\bnot\s+a\s+problem\b|\bbez\s+problemu\b")


def is_refusal(reason: str | None) -> bool:
    """True when the user's words say no (Czech or English), whatever the flag says."""
    if not reason:
        return False
    text = _NOT_REFUSALS.sub(" ", _fold(reason))
    return _REFUSAL.search(text) is not None


def is_approved(decision: Any) -> bool:
    """The resume value of an approval interrupt, read defensively."""
    if not isinstance(decision, dict):
        return bool(decision) and not is_refusal(str(decision))
    return bool(decision.get("approved")) and not is_refusal(decision.get("reason"))


def answer_text(decision: Any) -> str:
    """The user's text from a clarification resume value."""
    if isinstance(decision, dict):
        return str(decision.get("reason") or decision.get("modification") or "")
    return str(decision or "")
