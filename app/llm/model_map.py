"""litellm's model map, fitted to the models this service calls.

litellm reads a model's entry on every call: twice before the request (the Responses-API bridge
checks) and once after it (the price). For an Ollama model it first lower-cases every name in the
map (~4,200 entries, ~2 ms each time); for one the map does not list (every local model) it then
asks the server instead, with a synchronous `POST /api/show` on a new connection from the executor
thread that prepares the call. Against an instant server those lookups were half of litellm's own
time per call (`bench/orchestration.py`). So the map keeps the entries of the providers the tiers
use (a few hundred) and lists the local models as free chat models; a local model costs nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from app.llm.tiers import TierSpec

#: litellm's provider names for the providers of our tiers (`TierSpec.provider`).
_LITELLM_PROVIDERS = {"ollama": ("ollama", "ollama_chat"), "local": ("openai",), "openai": ("openai",),
                      "anthropic": ("anthropic",), "gemini": ("gemini",)}

_lock = threading.Lock()
_full: dict[str, Any] | None = None
"""litellm's map as loaded, before the first fitting (a later fitting may need more providers)."""
_providers: set[str] = set()
_local: dict[str, dict[str, Any]] = {}


def fit_model_map(specs: Iterable[TierSpec]) -> None:
    """Keep the entries of the tiers' providers (and of every provider fitted before in this
    process) and list the local tiers' models as free chat models."""
    import litellm  # here, not at import: app.llm.provider configures litellm's environment before importing it

    global _full
    specs = list(specs)
    providers = {name for spec in specs for name in _LITELLM_PROVIDERS.get(spec.provider, (spec.provider,))}
    local = {spec.model: {"litellm_provider": spec.model.split("/", 1)[0] if "/" in spec.model else "openai",
                          "mode": "chat", "input_cost_per_token": 0.0, "output_cost_per_token": 0.0}
             for spec in specs if spec.tier.local}
    with _lock:
        if providers <= _providers and local.keys() <= _local.keys():
            return
        if _full is None:
            _full = dict(litellm.model_cost)
        _providers.update(providers)
        _local.update(local)
        fitted = {name: entry for name, entry in _full.items() if entry.get("litellm_provider") in _providers}
        litellm.model_cost.clear()  # in place: litellm's modules hold the same dict
        litellm.model_cost.update(fitted)
        litellm.model_cost.update(_local)
        # litellm's own advice for a changed map: drop the lookup caches built from the old one.
        invalidate = getattr(litellm.utils, "_invalidate_model_cost_lowercase_map", None)
        if invalidate is not None:
            invalidate()
