"""What a tier's calls cost (app/llm/prices.py): litellm's price map, else `LLM_TIER_PRICES`, else
tokens only, said in `/health` — through real litellm against the scripted LLM server playing Anthropic."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from app.config import Settings
from app.health import HealthChecker
from app.llm.budget import BudgetExceededError, BudgetLimits, BudgetTracker
from app.llm.health import ProviderHealth
from app.llm.provider import LitellmProvider, estimate_cost
from app.llm.scope import LlmScope, use_scope
from app.llm.tiers import Tier
from tests.fixtures.llm_server import Reply, ScriptedLlmServer
from tests.unit.test_health import FakeKb, FakeMongo, FakeRuns

#: An Anthropic model litellm's bundled map does not list (a newer model than the pinned litellm knows).
UNLISTED = "anthropic/claude-jervis-unlisted"
MESSAGES = [{"role": "user", "content": "Summarise the project in one sentence."}]
ANSWER = "The project orchestrates coding agents on Kubernetes and reports every step to the user."


def provider(llm: ScriptedLlmServer, **settings: Any) -> LitellmProvider:
    values: dict[str, Any] = {"ollama_url": llm.url, "local_model": "test-model", "anthropic_api_key": "test-key",
                              "anthropic_api_base": llm.url, "cloud_reasoning_model": UNLISTED}
    return LitellmProvider(Settings(**(values | settings)))


async def cloud_call(llm: ScriptedLlmServer, models: LitellmProvider, budget: BudgetTracker) -> None:
    """One call on the cloud tier (the run approved the cloud), counted in `budget`."""
    llm.script(Reply(content=ANSWER))
    with use_scope(LlmScope(cloud_approved=True, can_ask=False, budget=budget)):
        assert await models.complete(MESSAGES, max_tokens=200) == ANSWER


async def test_a_model_litellm_does_not_price_is_priced_from_its_tier_setting(llm: ScriptedLlmServer) -> None:
    models = provider(llm, llm_tier_prices={"cloud_reasoning": {"input_per_mtok": 4.0, "output_per_mtok": 20.0}})
    budget = BudgetTracker(BudgetLimits(max_cost_usd=1.0))

    await cloud_call(llm, models, budget)

    assert [r.path for r in llm.requests] == ["/v1/messages"]
    usage = budget.by_key["-/cloud_reasoning"]
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.cost_usd == pytest.approx((usage.prompt_tokens * 4.0 + usage.completion_tokens * 20.0) / 1e6)
    assert models.prices.describe()["cloud_reasoning"] == {"source": "setting", "input_per_mtok": 4.0,
                                                           "output_per_mtok": 20.0}
    assert models.prices.warnings() == []


async def test_a_listed_model_keeps_litellms_price_and_local_tiers_cost_nothing(llm: ScriptedLlmServer) -> None:
    models = provider(llm, cloud_reasoning_model="anthropic/claude-sonnet-4-5",
                      llm_tier_prices={"cloud_reasoning": {"input_per_mtok": 99.0, "output_per_mtok": 99.0}})
    assert models.prices.describe()["cloud_reasoning"] == {"source": "litellm", "input_per_mtok": 3.0,
                                                           "output_per_mtok": 15.0}
    assert models.prices.cost(Tier.CLOUD_REASONING, 1000, 500) == estimate_cost("anthropic/claude-sonnet-4-5",
                                                                                 1000, 500)
    assert models.prices.cost(Tier.LOCAL_FAST, 10_000, 10_000) == 0.0
    assert models.prices.describe()["local_fast"]["source"] == "local"
    assert estimate_cost(UNLISTED, 1000, 500) is None  # the map's silence is a None, not a zero


def test_local_tiers_take_no_price_setting() -> None:
    with pytest.raises(ValidationError, match="local_fast"):
        Settings(llm_tier_prices={"local_fast": {"input_per_mtok": 1.0, "output_per_mtok": 1.0}})


async def test_without_a_price_tokens_count_health_warns_and_the_token_budget_still_stops(
        llm: ScriptedLlmServer) -> None:
    models = provider(llm, llm_tier_prices={})
    budget = BudgetTracker(BudgetLimits(max_tokens=20, max_cost_usd=0.000001))

    await cloud_call(llm, models, budget)

    total = budget.total()
    assert total.cost_usd == 0.0 and total.tokens > 20  # nothing priced, every token counted
    with use_scope(LlmScope(cloud_approved=True, can_ask=False, budget=budget)), \
            pytest.raises(BudgetExceededError, match=r"budget exhausted \(tokens\)"):
        await models.complete(MESSAGES, max_tokens=200)
    assert len(llm.requests) == 1  # refused before the second call

    [warning] = models.prices.warnings()
    assert warning.startswith(f"cloud_reasoning ({UNLISTED}) has no price in litellm's map nor in LLM_TIER_PRICES")
    assert "BUDGET_MAX_TOKENS" in warning
    async with httpx.AsyncClient() as http:
        health = HealthChecker(settings=Settings(health_cache_seconds=0), mongo=FakeMongo(), http=http,  # type: ignore[arg-type]
                               kb=FakeKb(), runs=FakeRuns(), llm=ProviderHealth(models, http, timeout=0.5))  # type: ignore[arg-type]
        report = await health.report()
    assert report["warnings"] == [warning]
    assert report["llm_tiers"]["cloud_reasoning"]["price"] == {"source": "none", "input_per_mtok": None,
                                                               "output_per_mtok": None}


def test_the_start_up_log_says_which_tier_cannot_be_priced(llm: ScriptedLlmServer,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    models = provider(llm, llm_tier_prices={})
    with caplog.at_level("INFO", logger="app.llm.prices"):
        models.prices.log_summary()
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [f"LLM budget: {models.prices.warnings()[0]}"]
    assert any("tier cloud_coding (openai/gpt-4o): $2.5 / $10 per million" in r.getMessage()
               for r in caplog.records)
