"""Drop planned steps that only do the orchestrator's own work: test, verify, commit or push.

A small model plans "2. Test the function and commit the changes" after the real edit, although
the prompt says the orchestrator runs the tests (`require_tests`), reviews the change and commits
after the user's approval. Such a step costs a full agent run (about 90 s with the local Aider,
which cannot run anything) and, told to commit, contradicts the rules. A step is dropped only when
every sentence of it is such a duty (conditionals like "if it works…" / "otherwise…" aside) and a
code step that changes files remains, so a plan is never emptied and an inspect step that reads or
analyses something is kept.
"""

from __future__ import annotations

import re

from app.schemas.domain import CodingStep, StepType

_NUMBERING = re.compile(r"^\s*(?:[-*•]|\d+[.)]|step\s+\d+[:.]?)\s*", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_DUTY_START = re.compile(
    r"^(?:then\s+|finally\s+|next\s+|also\s+|nakonec\s+|potom\s+|poté\s+)?"
    r"(?:test|run|execute|verify|check|ensure|make\s+sure|confirm|commit|push|stage|save|review|validate"
    r"|otestuj|spusť|ověř|zkontroluj|commitni|pushni|ulož|proveď\s+commit)\b",
    re.IGNORECASE,
)
_DUTY_WORD = re.compile(r"\b(?:tests?|testing|verify|commit|push|git|otestuj|ověř|testy)\b", re.IGNORECASE)
_CONDITIONAL = re.compile(r"^(?:if|otherwise|else|when|pokud|jinak|když)\b", re.IGNORECASE)


def sentences(instructions: str) -> list[str]:
    parts = (_NUMBERING.sub("", part).strip() for part in _SENTENCE.split(instructions))
    return [part for part in parts if part]


def is_orchestrator_duty(step: CodingStep) -> bool:
    """Every sentence tests, verifies, saves, commits or pushes (conditionals aside), and one names it."""
    if step.step_type != StepType.CODE:
        return False
    said = [s for s in sentences(step.instructions) if not _CONDITIONAL.match(s)]
    return bool(said) and all(_DUTY_START.match(s) for s in said) and \
        any(_DUTY_WORD.search(s) for s in said)


def without_orchestrator_duties(steps: list[CodingStep]) -> list[CodingStep]:
    """The steps minus pure test / commit / push steps, as long as a file-changing code step remains."""
    kept = [step for step in steps if not is_orchestrator_duty(step)]
    if any(step.step_type == StepType.CODE and step.expects_changes for step in kept):
        return kept
    return steps
