"""The LLM scope of one run segment: escalation policy and budget, seen by every LLM call.

The run driver sets it around the graph (a context variable), so nodes keep calling
`llm.complete(...)` and the provider finds out which cloud providers this run may use, whether
it may ask the user, and whose budget pays.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from app.llm.budget import BudgetTracker

_CLOUD_WORDS = re.compile(
    r"use (?:the )?cloud|cloud model|(?:použij|pouzij|použi|pouzi|přes|pres) (?:cloud|claude|gpt|gemini|openai)"
    r"|use (?:claude|gpt|gemini|openai|anthropic)|v cloudu|in the cloud",
    re.IGNORECASE,
)
_NAMED = {"claude": "anthropic", "anthropic": "anthropic", "gpt": "openai", "openai": "openai", "gemini": "gemini"}


def cloud_request(text: str) -> set[str] | None:
    """Providers the user's text explicitly asks for: a set (empty = any cloud), None = no request."""
    match = _CLOUD_WORDS.search(text or "")
    if match is None:
        return None
    named = {provider for word, provider in _NAMED.items() if word in match.group(0).lower()}
    return named


@dataclass
class LlmScope:
    auto_providers: set[str] = field(default_factory=set)
    """Cloud providers this run may use without asking (rules, or the user's explicit request)."""
    any_cloud: bool = False
    """The user asked for "the cloud" without naming a provider."""
    cloud_approved: bool = False
    """The user approved a `cloud_model` interrupt for this run."""
    can_ask: bool = True
    """Inside a graph node: a `cloud_model` interrupt is possible."""
    budget: BudgetTracker | None = None
    node: str = "-"
    task_id: str = ""

    def allows(self, provider: str) -> bool:
        return self.cloud_approved or self.any_cloud or provider in self.auto_providers


def scope_for(rules: dict[str, object], query: str, *, task_id: str = "", cloud_approved: bool = False,
              budget: BudgetTracker | None = None) -> LlmScope:
    providers = {name for name, flag in (("anthropic", "auto_use_anthropic"), ("openai", "auto_use_openai"),
                                         ("gemini", "auto_use_gemini")) if rules.get(flag)}
    asked = cloud_request(query)
    return LlmScope(auto_providers=providers | (asked or set()), any_cloud=asked == set(),
                    cloud_approved=cloud_approved, budget=budget, task_id=task_id)


_current: contextvars.ContextVar[LlmScope | None] = contextvars.ContextVar("llm_scope", default=None)


def current_scope() -> LlmScope:
    """Outside a run (compress-chat, corrections): local only, no interrupt, no budget."""
    return _current.get() or LlmScope(can_ask=False)


@contextmanager
def use_scope(scope: LlmScope) -> Iterator[LlmScope]:
    token = _current.set(scope)
    try:
        yield scope
    finally:
        _current.reset(token)
