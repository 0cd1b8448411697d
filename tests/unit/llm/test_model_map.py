"""litellm's model map fitted to our tiers (app/llm/model_map.py): what litellm reads on every call."""

from __future__ import annotations

import litellm

from app.config import Settings
from app.llm.model_map import fit_model_map
from app.llm.provider import LitellmProvider, estimate_cost
from app.llm.tiers import Tier, TierSpec


def providers_in_map() -> set[str]:
    return {str(entry.get("litellm_provider")) for entry in litellm.model_cost.values()}


def test_the_map_keeps_the_tiers_providers_and_lists_the_local_model_as_free() -> None:
    provider = LitellmProvider(Settings(local_model="qwen-test:7b"))

    assert litellm.model_cost["ollama_chat/qwen-test:7b"] == {
        "litellm_provider": "ollama_chat", "mode": "chat", "input_cost_per_token": 0.0, "output_cost_per_token": 0.0}
    assert "bedrock" not in providers_in_map() and len(litellm.model_cost) < 1000
    cloud = provider.specs[Tier.CLOUD_REASONING].model
    assert estimate_cost(cloud, 1000, 1000) > 0  # the cloud tiers are still priced


def test_a_later_fitting_brings_back_the_providers_it_needs() -> None:
    LitellmProvider(Settings(local_model="qwen-test:7b"))
    assert "deepseek" not in providers_in_map()

    fit_model_map([TierSpec(tier=Tier.CLOUD_CODING, model="deepseek/deepseek-chat", provider="deepseek",
                            api_base=None, api_key=None, context_tokens=None)])

    assert "deepseek" in providers_in_map() and "ollama_chat/qwen-test:7b" in litellm.model_cost
    assert estimate_cost("deepseek/deepseek-chat", 1000, 1000) > 0
