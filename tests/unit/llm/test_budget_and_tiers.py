"""Budgets, circuit breaker, tier selection and cloud-request detection (pure parts of app/llm)."""

from __future__ import annotations

import pytest

from app.llm.budget import BudgetExceededError, BudgetLimits, BudgetTracker, Usage
from app.llm.provider import CircuitBreaker
from app.llm.scope import cloud_request, scope_for
from app.llm.tiers import Tier, select_local_tier
from tests.support import FakeClock


def tracker(**limits: float) -> tuple[BudgetTracker, list[tuple[str, float]]]:
    warnings: list[tuple[str, float]] = []
    budget = BudgetTracker(BudgetLimits(**limits), on_warning=lambda name, f: warnings.append((name, f)))
    return budget, warnings


def test_budget_warns_once_at_80_percent_and_stops_at_100() -> None:
    budget, warnings = tracker(max_tokens=1000)
    budget.record("intake", "local_fast", Usage(prompt_tokens=700, completion_tokens=50, calls=1))
    budget.check()
    assert warnings == []
    budget.record("respond", "local_fast", Usage(prompt_tokens=60, calls=1))
    budget.record("respond", "local_fast", Usage(prompt_tokens=10, calls=1))
    assert warnings == [("tokens", 0.81)]  # at the first crossing, once, though recorded twice past it
    budget.record("finalize", "cloud_reasoning", Usage(prompt_tokens=180, cost_usd=0.01, calls=1))
    with pytest.raises(BudgetExceededError, match=r"\(tokens\)"):
        budget.check()
    assert budget.snapshot()["by_node_tier"]["finalize/cloud_reasoning"]["cost_usd"] == 0.01


def test_cost_limit_counts_dollars_and_extend_gives_room_above_what_was_used() -> None:
    budget, warnings = tracker(max_cost_usd=0.10, max_tokens=100_000)
    budget.record("plan", "cloud_coding", Usage(prompt_tokens=10, cost_usd=0.12, calls=1))
    with pytest.raises(BudgetExceededError, match="cost"):
        budget.check()
    budget.extend(2.0)
    budget.check()
    assert budget.limits == BudgetLimits(max_cost_usd=0.24, max_tokens=200_000)  # 2 × max(limit, used)
    assert [w[0] for w in warnings] == ["cost"]


@pytest.mark.parametrize(("language", "said"), [
    ("en", "Orchestration budget exhausted (tokens, cost): 20 tokens, $0.0200, "),
    ("cs", "Rozpočet orchestrace vyčerpán (tokeny, cena): 20 tokenů, 0.0200 USD, ")])
def test_the_exhausted_budget_is_said_in_the_runs_language(language: str, said: str) -> None:
    budget = BudgetTracker(BudgetLimits(max_tokens=10, max_cost_usd=0.01), language=language)
    budget.record("intake", "cloud_reasoning", Usage(prompt_tokens=20, cost_usd=0.02, calls=1))
    with pytest.raises(BudgetExceededError) as raised:
        budget.check()
    assert str(raised.value).startswith(said)


def test_budget_snapshot_restores_the_counts_of_earlier_segments() -> None:
    first, _ = tracker(max_tokens=500)
    first.record("intake", "local_fast", Usage(prompt_tokens=300, completion_tokens=100, cost_usd=0.0, calls=1))
    second, _ = tracker()
    second.restore(first.snapshot())
    assert second.total().tokens == 400 and second.limits.max_tokens == 500
    assert second.total().calls == 1


def test_request_limits_override_only_what_they_set() -> None:
    merged = BudgetLimits(max_tokens=1000, max_seconds=60).merged(BudgetLimits(max_tokens=10))
    assert merged == BudgetLimits(max_tokens=10, max_seconds=60)


def test_circuit_breaker_opens_after_repeated_failures_and_closes_later() -> None:
    clock = FakeClock(100.0)
    breaker = CircuitBreaker(failures=2, seconds=30, clock=clock)
    breaker.failure("ollama")
    assert not breaker.is_open("ollama")
    breaker.failure("ollama")
    assert breaker.is_open("ollama") and not breaker.is_open("anthropic")
    clock.now += 31
    assert not breaker.is_open("ollama")
    breaker.success("ollama")
    breaker.failure("ollama")
    assert not breaker.is_open("ollama")  # a success reset the count


@pytest.mark.parametrize(("tokens", "tier"), [(10, Tier.LOCAL_FAST), (8_000, Tier.LOCAL_FAST),
                                              (8_001, Tier.LOCAL_STANDARD), (32_001, Tier.LOCAL_LARGE)])
def test_local_tier_follows_prompt_size(tokens: int, tier: Tier) -> None:
    assert select_local_tier(tokens) is tier


@pytest.mark.parametrize(("text", "expected"), [
    ("Použij cloud a oprav to", set()), ("use the cloud please", set()), ("pouzij claude", {"anthropic"}),
    ("use GPT for this", {"openai"}), ("přes gemini", {"gemini"}), ("oprav chybu v cloudové službě", None),
    ("Přidej endpoint", None),
])
def test_cloud_request_in_czech_and_english(text: str, expected: set[str] | None) -> None:
    assert cloud_request(text) == expected


def test_scope_allows_rule_providers_and_explicit_requests() -> None:
    scope = scope_for({"auto_use_openai": True}, "oprav to")
    assert scope.allows("openai") and not scope.allows("anthropic")
    assert scope_for({}, "použij cloud").allows("gemini")
    assert scope_for({}, "oprav", cloud_approved=True).allows("anthropic")


def test_local_context_cap_shrinks_the_local_tiers_and_their_capacity() -> None:
    from app.config import Settings
    from app.llm.tiers import local_capacity, tier_specs

    capped = tier_specs(Settings(local_llm_api_base="http://127.0.0.1:9/v1", local_context_tokens=16_384))
    assert [capped[t].context_tokens for t in (Tier.LOCAL_FAST, Tier.LOCAL_STANDARD, Tier.LOCAL_LARGE)] == [
        8_192, 16_384, 16_384]
    assert local_capacity(capped) == 16_384 and capped[Tier.LOCAL_FAST].provider == "local"
    assert local_capacity(tier_specs(Settings())) == 49_000
