"""Agent choice per step (app/graph/rules/agent_selection.py) with the default table of app/config.py."""

from __future__ import annotations

import pytest

from app.agent_settings import DEFAULT_AGENT_SELECTION
from app.config import Settings
from app.graph.rules.agent_selection import select_agent


@pytest.mark.parametrize(
    ("complexity", "expected"),
    [("simple", "aider"), ("medium", "openhands"), ("complex", "openhands"), ("critical", "claude"),
     ("SIMPLE", "aider"), ("Critical", "claude")],
)
def test_select_agent_uses_the_default_table_when_preference_is_auto(complexity: str, expected: str) -> None:
    assert select_agent(complexity, "auto", DEFAULT_AGENT_SELECTION) == expected


@pytest.mark.parametrize("complexity", [None, "", "galactic"])
def test_select_agent_falls_back_to_claude_when_complexity_is_unknown(complexity: str | None) -> None:
    assert select_agent(complexity, "auto", DEFAULT_AGENT_SELECTION) == "claude"


@pytest.mark.parametrize("preference", ["aider", "junie", "claude"])
def test_select_agent_prefers_the_explicit_preference_over_the_table(preference: str) -> None:
    assert select_agent("critical", preference, DEFAULT_AGENT_SELECTION) == preference
    assert select_agent("simple", preference, DEFAULT_AGENT_SELECTION) == preference


def test_select_agent_treats_empty_preference_as_auto() -> None:
    assert select_agent("simple", "", DEFAULT_AGENT_SELECTION) == "aider"


def test_select_agent_uses_a_configured_mapping_when_settings_override_it() -> None:
    settings = Settings(agent_selection={"simple": "junie", "medium": "aider", "complex": "claude",
                                         "critical": "claude"})
    assert select_agent("simple", "auto", settings.agent_selection) == "junie"
    assert Settings().agent_selection == DEFAULT_AGENT_SELECTION
