"""What each tier's calls cost, and whether the run's dollar budget can count them at all.

A cloud model litellm's bundled price map lists is priced by litellm, from each call's own token
counts (tiered prices included); one it does not list is priced from `LLM_TIER_PRICES`, the
tier's USD per million prompt / completion tokens. With neither, the tier's calls count against
the token and time budgets only: `/health` (`warnings`) and the start-up log say so, because a
budget that cannot count is said, never silently zero. Local tiers cost nothing by definition.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from app.config import CloudTierName, TokenPrice
from app.llm.tiers import Tier, TierSpec

log = logging.getLogger(__name__)

#: litellm's price of `(model, prompt_tokens, completion_tokens)` in USD; None when it has none.
Lookup = Callable[[str, int, int], float | None]
Source = Literal["local", "litellm", "setting", "none"]
#: Tokens the per-million figures are read at: below every tiered price's threshold.
_PROBE_TOKENS = 1000


@dataclass(frozen=True)
class TierPrice:
    source: Source
    """`local` (free), `litellm` (its price map), `setting` (`LLM_TIER_PRICES`) or `none` (unknown)."""
    input_per_mtok: float | None = None
    output_per_mtok: float | None = None


class Prices:
    """Every tier's price, settled once (the tiers and settings do not change while the service runs)."""

    def __init__(self, specs: Mapping[Tier, TierSpec], configured: Mapping[CloudTierName, TokenPrice],
                 lookup: Lookup) -> None:
        self._specs = dict(specs)
        self._lookup = lookup
        by_tier = {Tier(name): price for name, price in configured.items()}
        self.tiers = {tier: self._price(spec, by_tier.get(tier)) for tier, spec in specs.items()}

    def _price(self, spec: TierSpec, configured: TokenPrice | None) -> TierPrice:
        if spec.tier.local:
            return TierPrice("local", 0.0, 0.0)
        prompt = self._lookup(spec.model, _PROBE_TOKENS, 0)
        completion = self._lookup(spec.model, 0, _PROBE_TOKENS)
        if prompt is not None and completion is not None:
            per_million = 1_000_000 / _PROBE_TOKENS
            return TierPrice("litellm", round(prompt * per_million, 6), round(completion * per_million, 6))
        if configured is not None:
            return TierPrice("setting", configured.input_per_mtok, configured.output_per_mtok)
        return TierPrice("none")

    def cost(self, tier: Tier, prompt_tokens: int, completion_tokens: int) -> float:
        """USD of one call; 0.0 for a local tier and for one whose price nobody knows (see `warnings`)."""
        price = self.tiers[tier]
        if price.source == "litellm":
            return self._lookup(self._specs[tier].model, prompt_tokens, completion_tokens) or 0.0
        if price.source == "setting" and price.input_per_mtok is not None and price.output_per_mtok is not None:
            return (prompt_tokens * price.input_per_mtok + completion_tokens * price.output_per_mtok) / 1_000_000
        return 0.0

    def warnings(self) -> list[str]:
        """One line per cloud tier the service can call (it has an API key) that has no price."""
        return [f"{tier.value} ({spec.model}) has no price in litellm's map nor in LLM_TIER_PRICES: its calls count "
                "against BUDGET_MAX_TOKENS and BUDGET_MAX_SECONDS only, not BUDGET_MAX_COST_USD"
                for tier, spec in self._specs.items() if self.tiers[tier].source == "none" and spec.api_key]

    def describe(self) -> dict[str, dict[str, Any]]:
        """Per tier, where its price comes from and what it is (`/health`, `llm_tiers[…].price`)."""
        return {tier.value: {"source": price.source, "input_per_mtok": price.input_per_mtok,
                             "output_per_mtok": price.output_per_mtok} for tier, price in self.tiers.items()}

    def log_summary(self) -> None:
        """At start-up: each cloud tier's price and its source, and a warning for each that has none."""
        for tier, price in self.tiers.items():
            if price.source in ("litellm", "setting"):
                log.info("tier %s (%s): $%g / $%g per million prompt / completion tokens (%s)", tier.value,
                         self._specs[tier].model, price.input_per_mtok, price.output_per_mtok,
                         "litellm's price map" if price.source == "litellm" else "LLM_TIER_PRICES")
        for warning in self.warnings():
            log.warning("LLM budget: %s", warning)
