"""The user's answers to gates and recovery questions, read deterministically first and by the
LLM only when the words alone do not say it. A failed or unreachable LLM never turns an answer
into something the user did not say: approvals fall back to an explicit yes among the words
(never to Kotlin's flag, which "yesterday" sets), recovery answers to "retry, with these words as the hint"."""

from __future__ import annotations

import logging
from typing import Any

from app.graph import prompts
from app.graph.rules.approval import answer_text, interpret_approval, is_approved
from app.graph.rules.failure_recovery import read_recovery_answer
from app.llm.budget import BudgetExceededError
from app.llm.provider import Llm, LlmError
from app.schemas.domain import ApprovalDecision, RecoveryAction, RecoveryChoice

log = logging.getLogger(__name__)


async def read_approval(llm: Llm, decision: Any, *, question: str) -> ApprovalDecision:
    """An approval gate's answer with its condition or reason."""
    read = interpret_approval(decision)
    if read is not None:
        return read
    words = answer_text(decision)
    try:
        return await llm.complete_json(prompts.interpret_approval(question=question, answer=words), ApprovalDecision,
                                       max_tokens=prompts.Cap.INTERPRET)
    except (LlmError, BudgetExceededError) as exc:
        log.warning("could not interpret the approval answer with the LLM (%s): only an explicit yes approves", exc)
        sent = decision.get("modification") if isinstance(decision, dict) else None
        approved = is_approved(decision)  # a refusal keeps its words as the reason (a replan reads them)
        return ApprovalDecision(approved=approved, modification=sent or None,
                                reason=None if approved else words.strip()[:300] or None)


async def read_recovery_choice(llm: Llm, answer: str, *, question: str) -> tuple[RecoveryAction, str]:
    """What the user wants after a failure: retry (with their hint), skip, replan or stop."""
    read = read_recovery_answer(answer)
    if read is not None:
        return read
    if answer.strip():
        try:
            choice = await llm.complete_json(prompts.interpret_recovery_answer(question=question, answer=answer),
                                             RecoveryChoice, max_tokens=prompts.Cap.INTERPRET)
            # Lenient models keep enum values as plain strings: turned back into the enum here.
            suggested = RecoveryAction(choice.suggested_action)
            action = RecoveryAction.RETRY if suggested in (
                RecoveryAction.RETRY_MODIFIED, RecoveryAction.ASK_USER) else suggested
            return action, (choice.hint or answer) if action == RecoveryAction.RETRY else ""
        except (LlmError, BudgetExceededError) as exc:
            log.warning("could not interpret the recovery answer with the LLM (%s): retrying with it", exc)
    return RecoveryAction.RETRY, answer.strip()
