"""Reading the user's answer to an interrupt (spec §13).

Kotlin marks an approval as approved when the text merely *contains* "ano", "yes", "approve"
or "schval", so "neschvaluji" and "What did you do yesterday?" both arrive as `approved: true`.
The flag therefore says nothing the words do not: when the user wrote something, only the words
decide, and a gate takes no yes it was not given. The flag counts only when no text came with it
(a button in a client that sends none).

Answers also carry conditions: "ano, ale ne do mastera" approves with a branch constraint,
"ano, ale přidej testy" approves with an added step, "ne, udělej to bez nové závislosti"
refuses with a reason a plan gate replans with. `interpret_approval` splits such an answer at
its first "but" (or the comma after a leading yes / no) and reads only the head for yes or no,
so a "ne" inside the condition never turns an approval into a refusal. What it cannot read
(no yes or no word at the head) it leaves to the LLM (`app/graph/user_answers.py`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Literal

from app.schemas.domain import ApprovalDecision
from app.texts.language import APOSTROPHES, fold

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


_NOT_REFUSALS = re.compile(r"\bno\s+(?:problem|worries)\b|\bnot\s+a\s+problem\b|\bbez\s+problemu\b")


def is_refusal(reason: str | None) -> bool:
    """True when the user's words say no (Czech or English), whatever the flag says."""
    if not reason:
        return False
    text = _NOT_REFUSALS.sub(" ", fold(reason))
    return _REFUSAL.search(text) is not None


#: An explicit yes written as a word of its own anywhere in the answer ("vypadá to dobře, schvaluji").
_YES_WORD = re.compile(r"\b(?:ano|yes|approve[ds]?|approving|schval\w*|souhlas\w*|potvrzuj\w*|lgtm)\b")


def says_yes(text: str) -> bool:
    """True when the words themselves approve: a yes word of its own ("yesterday" is none) and no refusal."""
    folded = _NOT_REFUSALS.sub(" ", fold(text))
    return _YES_WORD.search(folded) is not None and _REFUSAL.search(folded) is None


def is_approved(decision: Any) -> bool:
    """Whether an approval's resume value says yes, read without an LLM: the words at their head
    (`interpret_approval`), else an explicit yes word among them; Kotlin's flag only when no words
    came with it."""
    if not isinstance(decision, dict):
        decision = _as_decision(decision)
    read = interpret_approval(decision)
    if read is not None:
        return read.approved
    return says_yes(str(decision.get("reason") or ""))


def _as_decision(value: Any) -> dict[str, Any]:
    """A bare resume value (a bool from a test or an old client, or text) as Kotlin's three keys."""
    if isinstance(value, bool) or value is None:
        return {"approved": bool(value), "reason": None, "modification": None}
    return {"approved": True, "reason": str(value), "modification": None}


def answer_text(decision: Any) -> str:
    """The user's text from a clarification resume value."""
    if isinstance(decision, dict):
        return str(decision.get("reason") or decision.get("modification") or "")
    return str(decision or "")


# --- answers with conditions -----------------------------------------------------------------

_YES_HEAD = re.compile(
    r"^(?:ano|jo|jj|jasne|jiste|ok|okay|oki|dobre|dobra|fajn|souhlas\w*|schval\w*|potvrzuj\w*|pokracuj\w*"
    r"|yes|yep|yeah|sure|approve\w*|agreed?|fine|go(?:\s+ahead)?|lgtm|continue)\b"
)
#: What introduces a condition after a yes ("ano, ale …", "yes but …", "ano, jen backend").
_BUT = re.compile(r"\b(?:ale|avsak|vsak|akorat|jenom|jen|s\s+tim\s*,?\s*ze|but|however|only|except|provided)\b")
#: The connectives among them that carry no meaning of their own ("jen" / "only" do: they stay).
_CONNECTIVE = re.compile(r"(?:ale|avsak|vsak|akorat|but|however)\b")
_CLAUSE_BREAK = re.compile(r"[,;:!.\-–—]")


def _folded_with_map(text: str) -> tuple[str, list[int]]:
    """`fold(text)` plus, for every folded character, the index of the raw character it came
    from: conditions are cut from the raw text, so the user's own spelling survives."""
    chars: list[str] = []
    origin: list[int] = []
    for index, raw in enumerate(text.translate(APOSTROPHES)):
        for ch in unicodedata.normalize("NFKD", raw.lower()):
            if not unicodedata.combining(ch):
                chars.append(ch)
                origin.append(index)
    return "".join(chars), origin


def _clean_tail(text: str) -> str | None:
    """The condition without its leading connective and punctuation ("ale ne do mastera" → "ne do mastera")."""
    tail = text.strip().lstrip(",;:!.-–— ").strip()
    folded, origin = _folded_with_map(tail)
    match = _CONNECTIVE.match(folded)
    if match:
        tail = tail[origin[match.end() - 1] + 1:] if match.end() else tail
        tail = tail.strip().lstrip(",;:!.-–— ").strip()
    return tail or None


def interpret_approval(decision: Any) -> ApprovalDecision | None:
    """Approved / refused plus the attached condition, read without an LLM; None when the
    words say neither yes nor no at their head (the caller asks the LLM, then falls back to
    `is_approved`)."""
    if not isinstance(decision, dict):
        decision = _as_decision(decision)
    flag = bool(decision.get("approved"))
    reason = str(decision.get("reason") or "").strip()
    sent = str(decision.get("modification") or "").strip() or None  # Kotlin may send one: honoured
    if not reason:
        return ApprovalDecision(approved=flag, modification=sent)
    folded, origin = _folded_with_map(reason)
    text = folded.strip()
    offset = len(folded) - len(folded.lstrip())
    yes = _YES_HEAD.match(text)
    if yes is not None and not is_refusal(text[: yes.end()]):
        but = _BUT.search(text, yes.end())
        if but is not None:
            condition = _clean_tail(reason[origin[offset + but.start()]:])
            return ApprovalDecision(approved=True, modification=sent or condition)
        # "ano, ne do mastera" / "ano, přidej testy": a rule or more work after a bare comma counts;
        # a restatement ("ano, commitni to") does not.
        tail = _clean_tail(reason[origin[offset + yes.end()]:]) if yes.end() < len(text) else None
        if tail and classify_modification(tail).kind != "constraint":
            return ApprovalDecision(approved=True, modification=sent or tail)
        return ApprovalDecision(approved=True, modification=sent)
    breaks = [m.start() for m in (_CLAUSE_BREAK.search(text), _BUT.search(text)) if m is not None]
    head_end = min(breaks) if breaks else None
    head = text[:head_end] if head_end is not None else text
    if is_refusal(head):
        tail = reason[origin[offset + head_end]:] if head_end is not None else ""
        return ApprovalDecision(approved=False, reason=_reason_beyond_no(_clean_tail(tail)), modification=sent)
    return None


#: Words that only point back at what was asked ("don't do it", "nedělej to, prosím").
_FILLER = re.compile(r"\b(?:it|that|this|do|please|now|thanks|thank\s+you|to|ho|je|tohle|toto|prosim|dekuji|diky)\b")


def _reason_beyond_no(tail: str | None) -> str | None:
    """The refusal's reason, or None when the tail only repeats the no ("no, don't"): a plan gate
    replans on a reason, so a repeated no must not become one."""
    if not tail:
        return None
    rest = _FILLER.sub(" ", _REFUSAL.sub(" ", _NOT_REFUSALS.sub(" ", fold(tail))))
    return tail if re.search(r"\w", rest) else None


ModificationKind = Literal["branch", "add_step", "constraint"]
_KNOWN_BRANCHES = ("master", "main", "develop", "development", "dev", "production", "prod", "release", "staging")
_BRANCH_FORBID = re.compile(
    r"\b(?:ne|nikdy|not|never|dont|don't|do\s+not|no)\b[^,;]{0,15}?\b(?:do|to|into|na|on|onto|v|ve)\s+"
    r"(?:vetv\w*\s+|branch\s+)?[`'\"]?([\w./-]+)"
)
_BRANCH_TARGET = re.compile(r"\b(?:do|to|into|na|on|onto)\s+(?:vetv\w*|branch\w*)\s+[`'\"]?([\w./-]+)")
_ADD_WORK = re.compile(
    r"^(?:a\s+|and\s+|also\s+|jeste\s+|taky\s+|take\s+)?(?:pridej\w*|dopln\w*|napis\w*|vytvor\w*|oprav\w*|uprav\w*"
    r"|zmen\w*|implementuj\w*|doplnit|add|include|write|create|fix|update|change|implement|extend|rozsir\w*)\b"
)


@dataclass(frozen=True)
class Modification:
    """What a condition asks for: a branch rule, more work, or a constraint on the rest."""

    kind: ModificationKind
    text: str
    forbidden_branch: str | None = None
    target_branch: str | None = None


def _branch_word(token: str) -> str:
    """"mastera" / "mainu" (Czech cases) → the branch they name; anything else as written."""
    bare = token.strip("`'\".,;")
    for name in _KNOWN_BRANCHES:
        if bare.lower().startswith(name) and len(bare) - len(name) <= 2:
            return name
    return bare


def classify_modification(text: str) -> Modification:
    """Deterministic: a branch rule when the words name one, more work when they start with a
    verb that adds or changes something, else a constraint every later step must respect."""
    folded, origin = _folded_with_map(text)
    forbid = _BRANCH_FORBID.search(folded)
    if forbid:
        return Modification("branch", text, forbidden_branch=_branch_word(forbid.group(1)))
    target = _BRANCH_TARGET.search(folded)
    if target:  # the user's own spelling of the branch name (case matters to git)
        raw = text.translate(APOSTROPHES)[origin[target.start(1)]: origin[target.end(1) - 1] + 1]
        return Modification("branch", text, target_branch=raw.strip("`'\".,;"))
    if _ADD_WORK.match(folded.strip()):
        return Modification("add_step", text)
    return Modification("constraint", text)
