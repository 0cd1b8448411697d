"""Answers to a run's questions: which interrupt an answer goes to, and the refusal of a second
answer to a question already answered (409 with the answer taken, `RunAnsweredError`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from langgraph.types import Command, Interrupt

from app.persistence.runs import RunRecord
from app.runs.errors import RunAnsweredError


def resume_command(pending: Sequence[Interrupt], answer: dict[str, Any]) -> Command[Any]:
    """The answer to the question asked (the first pending interrupt). Goals of a wave may ask at
    the same time (a budget or cloud approval in each): the answer then goes to that interrupt by
    id, and the others are asked next, one at a time."""
    if len(pending) > 1:
        return Command(resume={pending[0].id: answer})
    return Command(resume=answer)

def answered(thread_id: str, record: RunRecord | None) -> RunAnsweredError:
    """The refusal of a second answer, with the one that was taken (when it is on record yet)."""
    answer = dict(record.answer) if record is not None and record.answer else {}
    if not answer:
        return RunAnsweredError(f"{thread_id}: the question is being answered right now")
    at = datetime.fromtimestamp(float(answer.get("answered_at") or 0), UTC).isoformat(timespec="seconds")
    verdict = "approved" if answer.get("approved") else "declined"
    answer["answered_at"] = at
    return RunAnsweredError(f"{thread_id}: this question was already answered ({verdict} at {at}, on pod "
                            f"{answer.get('pod_id')})", answer)
