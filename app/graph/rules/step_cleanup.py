"""Clean a small model's step plan: drop steps that only do the orchestrator's own work (test,
verify, commit, push) and merge the one-line steps it splits a single edit into.

A small model plans "2. Test the function and commit the changes" after the real edit, although
the prompt says the orchestrator runs the tests (`require_tests`), reviews the change and commits
after the user's approval. Such a step costs a full agent run (about 90 s with the local Aider,
which cannot run anything) and, told to commit, contradicts the rules. A step is dropped only when
every sentence of it is such a duty (conditionals like "if it works…" / "otherwise…" aside) and a
code step that changes files remains, so a plan is never emptied and an inspect step that reads or
analyses something is kept. Steps for a person at a keyboard go the same way ("Open a terminal or
command prompt. Navigate to the directory where calc.py is located. Run python calc.py."): the
agent works in the workspace already and such a step changes nothing, so the verifier rightly
refuses every attempt at it and the run ends in error after the real edit was done.

A small model also turns each line of a recipe into a step ("1. Open calc.py", "2. Add a function
multiply", "3. Return a * b"): four agent runs of a minute or more for one edit, each of which sees
only its line. Consecutive short code steps on the same files become one step with the lines in
order; detailed steps (a large model's) and steps on different files stay apart.
"""

from __future__ import annotations

import logging
import re

from app.schemas.domain import CodingStep, StepType

log = logging.getLogger(__name__)

_NUMBERING = re.compile(r"^\s*(?:[-*•]|\d+[.)]|step\s+\d+[:.]?)\s*", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_DUTY_START = re.compile(
    r"^(?:then\s+|finally\s+|next\s+|also\s+|nakonec\s+|potom\s+|poté\s+)?"
    r"(?:test|run|execute|verify|check|ensure|make\s+sure|confirm|commit|push|stage|save|review|validate"
    r"|otestuj|spusť|ověř|zkontroluj|commitni|pushni|ulož|proveď\s+commit)\b",
    re.IGNORECASE,
)
#: Operating the machine: opening a terminal, changing directory.
_SHELL_START = re.compile(
    r"^(?:then\s+|first\s+|next\s+|nejdřív\s+|potom\s+)?"
    r"(?:(?:open|launch|start)\s+(?:a|the|your)\s+(?:new\s+)?"
    r"(?:terminal|command\s+prompt|command\s+line|shell|console|python\s+(?:interpreter|shell))"
    r"|navigate\s+to\s+(?:the\s+|your\s+)?(?:project\s+|repository\s+)?(?:directory|folder|root)"
    r"|(?:go|change)\s+(?:to|into)\s+(?:the\s+|your\s+)?(?:project\s+|repository\s+)?(?:directory|folder)"
    r"|cd\s|otevři\s+(?:terminál|příkazovou\s+řádku|konzoli)|přejdi\s+do\s+(?:adresáře|složky))",
    re.IGNORECASE,
)
#: A line that is a command to type (lower-case, as typed: "Python 3.12 added..." is prose).
_COMMAND = re.compile(r"^(?:\$\s*)?(?:python3?|pip3?|pytest|git|npm|npx|node|bash|sh|cd)\s|^\./")
#: A sentence that names a change to make is work, however it starts.
_WORK_WORD = re.compile(
    r"\b(?:fix|add|implement|change|modify|update|write|create|remove|delete|rename|refactor|replace|edit"
    r"|oprav|přidej|změň|uprav|napiš|vytvoř|odstraň|smaž|přejmenuj)\w*",
    re.IGNORECASE,
)
_DUTY_WORD = re.compile(r"\b(?:tests?|testing|verify|commit|push|git|otestuj|ověř|testy)\b", re.IGNORECASE)
#: A step this short is one line of a recipe, not a self-contained task.
SHORT_STEP_CHARS = 300
_CONDITIONAL = re.compile(r"^(?:if|otherwise|else|when|pokud|jinak|když)\b", re.IGNORECASE)


_INLINE_CODE = re.compile(r"`[^`\n]*`")


def sentences(instructions: str) -> list[str]:
    """The instructions' sentences, numbering dropped; inline code (`...`) is one word, not split at its `;`."""
    parts = (_NUMBERING.sub("", part).strip() for part in _SENTENCE.split(_INLINE_CODE.sub("`code`", instructions)))
    return [part for part in parts if part]


def operates_the_machine(sentence: str) -> bool:
    """A command to type, or opening a terminal or changing directory without naming a change to make."""
    return bool(_COMMAND.match(sentence)) or (bool(_SHELL_START.match(sentence)) and not _WORK_WORD.search(sentence))


def is_orchestrator_duty(step: CodingStep) -> bool:
    """Every sentence tests, verifies, saves, commits or pushes, or operates the machine
    (conditionals aside), and one names a duty or operates the machine."""
    if step.step_type != StepType.CODE:
        return False
    said = [s for s in sentences(step.instructions) if not _CONDITIONAL.match(s)]
    if not said:
        return False
    rest = [s for s in said if not operates_the_machine(s)]
    return all(_DUTY_START.match(s) for s in rest) and \
        (len(rest) < len(said) or any(_DUTY_WORD.search(s) for s in rest))


def without_orchestrator_duties(steps: list[CodingStep]) -> list[CodingStep]:
    """The steps minus pure test / commit / push steps, as long as a file-changing code step remains."""
    kept = [step for step in steps if not is_orchestrator_duty(step)]
    if any(step.step_type == StepType.CODE and step.expects_changes for step in kept):
        return kept
    return steps


def merged_short_steps(steps: list[CodingStep]) -> list[CodingStep]:
    """Consecutive short, file-changing code steps on the same files, merged into one."""
    merged: list[CodingStep] = []
    for step in steps:
        last = merged[-1] if merged else None
        if last is not None and _edits(last) and _edits(step) and set(last.files) == set(step.files) \
                and len(step.instructions) <= SHORT_STEP_CHARS \
                and len(last.instructions) + len(step.instructions) <= SHORT_STEP_CHARS * 3:
            merged[-1] = last.model_copy(update={
                "instructions": f"{last.instructions.rstrip()}\n{step.instructions.strip()}",
                "critical": last.critical or step.critical})
        else:
            merged.append(step)
    return merged


def _edits(step: CodingStep) -> bool:
    return step.step_type == StepType.CODE and step.expects_changes and bool(step.files)


def cleaned_steps(steps: list[CodingStep]) -> list[CodingStep]:
    """What the planners hand on: duties dropped, then recipe lines merged."""
    kept = without_orchestrator_duties(steps)
    if len(kept) < len(steps):
        log.info("plan: dropped %d of %d steps that only test, commit or operate the machine",
                 len(steps) - len(kept), len(steps))
    return merged_short_steps(kept)
