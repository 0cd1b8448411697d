"""The local models in litellm's model map, so that litellm looks them up instead of asking.

litellm reads a model's entry on every call (the Responses-API bridge check before the request,
the price after it). For an Ollama model its map does not list (every local model) it asks the
server instead: a synchronous `POST /api/show` on a new connection from the executor thread that
prepares the call, after building a set of every name in the map (~2,600). That took a third of
litellm's own time per call against an instant server (`bench/orchestration.py`). Listed as free
chat models, they are found in the map at once; a local model costs nothing anyway.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from app.llm.tiers import TierSpec

_registered: set[str] = set()
_lock = threading.Lock()


def register_local_models(specs: Iterable[TierSpec]) -> None:
    """Enter each local tier's model into litellm's map as a free chat model (once per process)."""
    entries = {}
    for spec in specs:
        if not spec.tier.local or spec.model in _registered:
            continue
        provider = spec.model.split("/", 1)[0] if "/" in spec.model else "openai"
        entries[spec.model] = {"litellm_provider": provider, "mode": "chat",
                               "input_cost_per_token": 0.0, "output_cost_per_token": 0.0}
    if not entries:
        return
    import litellm  # here, not at import: app.llm.provider configures litellm's environment before importing it

    with _lock:
        litellm.register_model(entries)
        _registered.update(entries)
