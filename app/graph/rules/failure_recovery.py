"""What happens after a failed step: the policy behind `reflect` and `ask_user` (spec 000's
ReflectionEngine and RecoveryManager, made bounded).

The reflection LLM suggests an action; this module holds the rules that make every path end:
- no usable suggestion (or none asked for: the first failures of a step are retried with the
  failure as feedback without a reflection call) → retry with the raw failure, then ask the user;
- the same failure again (the same failing output and the same change as an earlier attempt of
  the step) → the retry must take another approach, from the step's start; a third time → ask
  the user; a retry after failing tests alone works on the failed attempt's change, as a test
  loop would;
- `skip_step` only for steps the plan marks non-critical;
- attempts per step, replans and questions per run are capped; a retry or replan past its cap
  becomes a question, and a question past its cap (or a second one about the same exhausted
  step) becomes `stop`.
Stopping is not failing silently: the run offers the finished work for commit and reports.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from app.config import Settings
from app.schemas.domain import Recovery, RecoveryAction, Reflection
from app.texts.language import fold

RETRIES = frozenset({RecoveryAction.RETRY, RecoveryAction.RETRY_MODIFIED})


@dataclass(frozen=True)
class Caps:
    max_attempts: int
    max_replans: int
    max_questions: int

    @classmethod
    def from_settings(cls, settings: Settings) -> Caps:
        return cls(settings.recovery_max_attempts, settings.recovery_max_replans, settings.recovery_max_questions)


@dataclass(frozen=True)
class FailedStep:
    """Where the run stands when a step failed (read from the state)."""

    goal_index: int
    step_index: int
    attempt: int
    critical: bool
    extra_attempts: int = 0
    cap_asked: bool = False
    replans: int = 0
    questions: int = 0
    repeats: int = 0
    """Earlier attempts of this step that failed exactly like this one (same output, same change)."""

    def attempts_left(self, caps: Caps) -> bool:
        return self.attempt < caps.max_attempts + self.extra_attempts


def decide(suggestion: Reflection | None, step: FailedStep, caps: Caps, *, failure: str, reflected: bool = True,
           repeat_hint: str = "", tests_only: bool = False) -> Recovery:
    """The reflection's suggestion, held to the rules above. `reflected` False: no reflection was
    asked for (an early failure), so the failure itself is the retry's feedback. `repeat_hint`:
    what a retry after the same failure is told to do differently. `tests_only`: the attempt's
    change was whole and only the tests failed, so a retry fixes it in place (unless the same
    failure came back: then it starts over)."""
    source = "llm" if suggestion is not None else ("fallback" if reflected else "rule")
    action = suggestion.suggested_action if suggestion is not None else (
        RecoveryAction.RETRY if step.attempt == 1 or not reflected else RecoveryAction.ASK_USER)
    hint = suggestion.modification_hint if suggestion else ""
    notes: list[str] = []
    if step.repeats >= 2 and action in RETRIES:
        notes.append(f"the same failure {step.repeats + 1} times")
        action = RecoveryAction.ASK_USER
    elif step.repeats == 1 and action in RETRIES:
        notes.append("the same failure as an earlier attempt: another approach")
        action, hint = RecoveryAction.RETRY_MODIFIED, " ".join(part for part in (repeat_hint, hint) if part)
    if action == RecoveryAction.SKIP_STEP and step.critical:
        notes.append("skip refused: the step is critical")
        action = RecoveryAction.RETRY_MODIFIED if step.attempts_left(caps) else RecoveryAction.ASK_USER
    if action == RecoveryAction.REPLANNING and step.replans >= caps.max_replans:
        notes.append(f"replanning refused: {caps.max_replans} replan(s) used")
        action = RecoveryAction.RETRY_MODIFIED if step.attempts_left(caps) else RecoveryAction.ASK_USER
    if action in RETRIES and not step.attempts_left(caps):
        notes.append(f"{step.attempt} attempt(s) used")
        action = RecoveryAction.ASK_USER
    if action == RecoveryAction.ASK_USER:
        if step.cap_asked and not step.attempts_left(caps):
            notes.append("the user was already asked about this step")
            action = RecoveryAction.STOP
        elif step.questions >= caps.max_questions:
            notes.append(f"{caps.max_questions} question(s) asked")
            action = RecoveryAction.STOP
    if notes:
        source = "cap" if action in (RecoveryAction.ASK_USER, RecoveryAction.STOP) else source
    return Recovery(
        action=action, goal_index=step.goal_index, step_index=step.step_index, attempt=step.attempt,
        failure=failure, analysis=suggestion.analysis if suggestion else "",
        root_cause=suggestion.root_cause if suggestion else "",
        confidence=suggestion.confidence if suggestion else None,
        hint=hint, source=source, note="; ".join(notes),
        keep_changes=action in RETRIES and tests_only and step.repeats == 0,
    )


#: What differs between two runs of the same failure: timings, addresses, temporary paths.
_VOLATILE = re.compile(r"\b\d+(?:\.\d+)?\s*(?:s|ms|sec|seconds)\b|0x[0-9a-fA-F]+|/tmp/\S+")


def failure_signature(failure: str, diff: str) -> str:
    """Identity of a failed attempt: its failure (timings and addresses aside) and its change. Two
    attempts with the same signature failed the same way with the same code."""
    text = _VOLATILE.sub("#", " ".join(failure.split())) + "\n" + diff
    return hashlib.sha1(text.encode()).hexdigest()[:16]


# --- the user's answer to a recovery question ------------------------------------------------

_CHOICES: tuple[tuple[RecoveryAction, re.Pattern[str]], ...] = (
    (RecoveryAction.STOP, re.compile(
        r"\b(?:stop\w*|zastav\w*|ukonc\w*|konec|skonc\w*|zrus\w*|abort\w*|cancel\w*|quit|give\s+up|vzdej\w*"
        r"|nech\s+to\s+byt|dost)\b")),
    (RecoveryAction.SKIP_STEP, re.compile(r"\b(?:preskoc\w*|vynech\w*|skip\w*|ignoruj\w*|ignore)\b")),
    (RecoveryAction.REPLANNING, re.compile(
        r"\b(?:preplanuj\w*|replan\w*|novy\s+plan|naplanuj\w*\s+(?:to\s+)?znovu|plan\s+(?:it\s+)?again)\b")),
    (RecoveryAction.RETRY, re.compile(
        r"\b(?:zkus\w*(?:\s+to)?(?:\s+znovu)?|znovu|opakuj\w*|retry|try(?:\s+it)?\s+again|again|pokracuj\w*)\b")),
)
_LEADING_JUNK = re.compile(r"^[\s,;:.!\-–—]+")
#: A bare yes: the user wants the work to go on (a small model read "ano" as stop).
_BARE_YES = re.compile(r"(?:ano|jo|jasne|ok|okay|yes|yep|sure|go\s+on|dobre|dobra|klidne)")


def read_recovery_answer(answer: str) -> tuple[RecoveryAction, str] | None:
    """The action the user's words ask for, and the rest of their words as the hint; None when
    no keyword says it (the caller asks the LLM, then treats the words as a retry hint)."""
    folded = fold(answer)
    if _BARE_YES.fullmatch(folded.strip(" .!,")):  # "ano" to "what shall I do?": go on, try again
        return RecoveryAction.RETRY, ""
    found: list[tuple[int, RecoveryAction, int]] = []
    for action, pattern in _CHOICES:
        match = pattern.search(folded)
        if match is not None and not _negated(folded, match.start()):
            found.append((match.start(), action, match.end()))
    if not found:
        return None
    _, action, end = min(found)
    # Folding keeps Czech and English text the same length, so folded offsets cut the raw words.
    hint = _LEADING_JUNK.sub("", answer[end:]).strip() if len(answer) == len(folded) else answer.strip()
    return action, hint if action in RETRIES else ""


#: Czech words that start with "ne" without negating anything.
_NOT_NEGATIONS = frozenset("nebo nejdriv nejprve nejak nejlip nejlepe neco nekdy nekde nekolik nez nejen".split())


def _negated(folded: str, start: int) -> bool:
    """"don't skip", "ne, přeskoč ne…", "nezkoušej to znovu": a keyword right after a negation,
    or in a clause whose verb is negated with Czech "ne-", does not count."""
    before = folded[max(0, start - 8):start]
    if re.search(r"(?:\bne\b|\bnot\b|\bdon'?t\b|\bnikoli\b)\s*$", before):
        return True
    clause = re.split(r"[,;:.!?]", folded[:start])[-1]
    return any(word.startswith("ne") and len(word) > 3 and word not in _NOT_NEGATIONS
               for word in re.findall(r"[a-z]+", clause))
