"""The approval gate between nodes and the language model.

The LLM layer raises an `ApprovalNeededError` when only the user can let a call go on; this
gate asks (a LangGraph interrupt, worded in the run's language) at the very point of the call,
so a resumed node replays its earlier interrupts unchanged and meets this one at the same index.
A budget approval doubles the run's budget and repeats the call; a cloud approval is applied by
the run manager, which resumes the run with a scope that allows the cloud (the node re-runs and
its call escalates), so here an answer to it only ends in the original error.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from langgraph.types import interrupt
from pydantic import BaseModel

from app.graph.rules.approval import is_approved
from app.llm.approval import ApprovalNeededError, BudgetApprovalNeededError, CloudApprovalNeededError
from app.llm.provider import Llm, Message, TokenSink
from app.llm.scope import current_scope
from app.texts import texts

ModelT = TypeVar("ModelT", bound=BaseModel)
T = TypeVar("T")

_language: contextvars.ContextVar[str | None] = contextvars.ContextVar("run_language", default=None)


@contextmanager
def speaking(language: str) -> Iterator[None]:
    """The run's language for the gate's questions while a node runs (set by the node wrapper)."""
    token = _language.set(language)
    try:
        yield
    finally:
        _language.reset(token)


def approval_request(need: ApprovalNeededError, language: str | None) -> dict[str, Any]:
    """The interrupt payload Kotlin shows as an approval (kotlin-contract: interruptAction/Description)."""
    t = texts(language)
    if isinstance(need, BudgetApprovalNeededError):
        return {"type": "approval_request", "action": need.action, "task_id": need.task_id,
                "description": t.budget_extension_gate.format(error=need.cause)}
    if isinstance(need, CloudApprovalNeededError):
        cause = " ".join(str(need.cause).split())
        cause = cause if len(cause) <= 160 else cause[:160] + "…"
        return {"type": "approval_request", "action": need.action, "task_id": need.task_id,
                "description": t.cloud_escalation_gate.format(cause=cause, model=need.model, tier=need.tier,
                                                              cost=f"{need.estimated_cost_usd:.4f}"),
                "cloud_tier": need.tier, "model": need.model, "estimated_cost_usd": need.estimated_cost_usd}
    raise TypeError(f"unknown approval signal {type(need).__name__}")


class ApprovingLlm:
    """An `Llm` whose calls ask the user when the provider needs an approval."""

    def __init__(self, inner: Llm) -> None:
        self.inner = inner

    async def complete(self, messages: Sequence[Message], *, max_tokens: int, json_mode: bool = False,
                       on_token: TokenSink | None = None) -> str:
        return await self._asking(lambda: self.inner.complete(messages, max_tokens=max_tokens, json_mode=json_mode,
                                                              on_token=on_token))

    async def complete_json(self, messages: Sequence[Message], schema: type[ModelT], *, max_tokens: int,
                            on_token: TokenSink | None = None) -> ModelT:
        return await self._asking(lambda: self.inner.complete_json(messages, schema, max_tokens=max_tokens,
                                                                   on_token=on_token))

    async def _asking(self, call: Callable[[], Awaitable[T]]) -> T:
        asked = 0
        while True:  # bounded: a budget is extended at most twice per call before the error stands
            try:
                return await call()
            except ApprovalNeededError as need:
                decision = interrupt(approval_request(need, _language.get()))
                asked += 1
                if isinstance(need, BudgetApprovalNeededError) and is_approved(decision) and asked <= 2:
                    budget = current_scope().budget
                    if budget is not None:
                        budget.extend(2.0)
                        continue
                raise need.cause from need
