"""Model tiers (spec §8.1, §8.2): which model serves a call, as configuration."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.config import Settings

LOCAL_CONTEXT = {"local_fast": 8_192, "local_standard": 32_768, "local_large": 49_152}
#: Calls needing more (prompt + output) go straight to the cloud (when allowed).
LOCAL_MAX_TOKENS = 49_000


class Tier(StrEnum):
    LOCAL_FAST = "local_fast"
    LOCAL_STANDARD = "local_standard"
    LOCAL_LARGE = "local_large"
    CLOUD_REASONING = "cloud_reasoning"
    CLOUD_CODING = "cloud_coding"
    CLOUD_PREMIUM = "cloud_premium"
    CLOUD_LARGE_CONTEXT = "cloud_large_context"

    @property
    def local(self) -> bool:
        return self.value.startswith("local")


@dataclass(frozen=True)
class TierSpec:
    tier: Tier
    model: str
    provider: str
    """"ollama", "local" (an OpenAI-compatible local server), "anthropic", "openai" or "gemini"."""
    api_base: str | None
    api_key: str | None
    context_tokens: int | None

    def call_kwargs(self) -> dict[str, object]:
        """What every litellm call to this tier names: the model, its endpoint and key when set,
        and Ollama's context size (`num_ctx`; Ollama's own default would cut long prompts)."""
        kwargs: dict[str, object] = {"model": self.model}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        if self.provider == "ollama" and self.context_tokens:
            kwargs["num_ctx"] = self.context_tokens
        return kwargs


def local_capacity(specs: dict[Tier, TierSpec]) -> int:
    """The most (prompt + output) tokens any local tier can hold; above it, only the cloud."""
    return min(LOCAL_MAX_TOKENS, specs[Tier.LOCAL_LARGE].context_tokens or LOCAL_MAX_TOKENS)


def select_local_tier(tokens: int) -> Tier:
    """The smallest local context that holds `tokens` (prompt plus the output budget)."""
    if tokens > 32_000:
        return Tier.LOCAL_LARGE
    if tokens > 8_000:
        return Tier.LOCAL_STANDARD
    return Tier.LOCAL_FAST


def _secret(value: object) -> str | None:
    return value.get_secret_value() if value is not None else None  # type: ignore[attr-defined]


def tier_specs(settings: Settings) -> dict[Tier, TierSpec]:
    if settings.local_llm_api_base:
        local: dict[str, Any] = {"model": settings.local_llm_model, "provider": "local",
                                 "api_base": settings.local_llm_api_base,
                 "api_key": "local"}
    else:
        local = {"model": f"ollama_chat/{settings.local_model}", "provider": "ollama",
                 "api_base": settings.ollama_url, "api_key": None}
    cap = settings.local_context_tokens or LOCAL_CONTEXT["local_large"]
    specs = {tier: TierSpec(tier=tier, context_tokens=min(LOCAL_CONTEXT[tier.value], cap), **local)
             for tier in (Tier.LOCAL_FAST, Tier.LOCAL_STANDARD, Tier.LOCAL_LARGE)}
    cloud = {
        Tier.CLOUD_REASONING: settings.cloud_reasoning_model,
        Tier.CLOUD_CODING: settings.cloud_coding_model,
        Tier.CLOUD_PREMIUM: settings.cloud_premium_model,
        Tier.CLOUD_LARGE_CONTEXT: settings.cloud_large_context_model,
    }
    keys = {"anthropic": settings.anthropic_api_key, "openai": settings.openai_api_key,
            "gemini": settings.google_api_key}
    bases = {"anthropic": settings.anthropic_api_base, "openai": settings.openai_api_base,
             "gemini": settings.gemini_api_base}
    for tier, model in cloud.items():
        provider = model.split("/", 1)[0]
        specs[tier] = TierSpec(tier=tier, model=model, provider=provider, api_base=bases.get(provider),
                               api_key=_secret(keys.get(provider)), context_tokens=None)
    return specs


#: Which cloud tier serves a purpose, in order of preference (spec §8.1: auto=anthropic → reasoning…).
CLOUD_PREFERENCE: dict[str, tuple[Tier, ...]] = {
    "default": (Tier.CLOUD_REASONING, Tier.CLOUD_CODING, Tier.CLOUD_LARGE_CONTEXT),
    "large": (Tier.CLOUD_LARGE_CONTEXT, Tier.CLOUD_REASONING, Tier.CLOUD_CODING),
}
