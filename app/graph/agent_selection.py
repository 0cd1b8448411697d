"""Which coding agent runs a step ("Agent Selection Strategy", top of the spec; configurable)."""

from __future__ import annotations

from collections.abc import Mapping


def select_agent(complexity: str | None, preference: str, mapping: Mapping[str, str]) -> str:
    """An explicit preference wins; otherwise the complexity → agent table; unknown → claude."""
    if preference and preference != "auto":
        return preference
    return mapping.get((complexity or "").lower(), "claude")
