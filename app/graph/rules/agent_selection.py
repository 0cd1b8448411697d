"""Which coding agent runs a step ("Agent Selection Strategy", top of the spec; configurable).

The spec's table picks by complexity; its agent profiles add two limits the table alone would
break: Claude is the cloud agent (Anthropic), so a table choice of Claude stands only where the
project's rules allow Anthropic (`auto_use_anthropic`) or the request asked for the cloud; Junie is
the premium agent "only for projects with explicit permission", i.e. an `agent_preference` of
`junie`. An explicit preference is the project's own choice and always stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: The local agent that takes a step the table gave to an agent the project does not allow.
LOCAL_FALLBACK = "openhands"


@dataclass(frozen=True)
class AgentChoice:
    agent: str
    reason: str = ""
    """Why `agent` is not the table's choice ("" when it is)."""


def select_agent(complexity: str | None, preference: str, mapping: Mapping[str, str]) -> str:
    """An explicit preference wins; otherwise the complexity → agent table; unknown → claude."""
    if preference and preference != "auto":
        return preference
    return mapping.get((complexity or "").lower(), "claude")


def choose_agent(complexity: str | None, preference: str, mapping: Mapping[str, str], *,
                 cloud_allowed: bool) -> AgentChoice:
    """`select_agent`, then the profiles' limits: Junie only by preference, Claude only with the cloud."""
    wanted = select_agent(complexity, preference, mapping)
    if preference and preference != "auto":
        return AgentChoice(wanted)
    reasons = []
    agent = wanted
    if agent == "junie":
        reasons.append("junie runs only where the project chose it (agent_preference=junie)")
        agent = "claude"
    if agent == "claude" and not cloud_allowed:
        reasons.append("claude is the cloud agent and the project's rules do not allow Anthropic "
                       "(auto_use_anthropic is off)")
        local = mapping.get("complex", LOCAL_FALLBACK)
        agent = local if local not in ("claude", "junie") else LOCAL_FALLBACK
    return AgentChoice(agent, "; ".join(reasons))
