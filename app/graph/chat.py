"""Chat history as the nodes use it (spec §16.4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.graph.state import OrchestratorState
from app.graph.state_access import Inputs


def _history(state: OrchestratorState) -> Mapping[str, Any]:
    return Inputs.of(state).chat_history or {}


def recent_messages(state: OrchestratorState, limit: int | None = None, *, exclude_last: str | None = None) -> str:
    """The last messages verbatim (intake uses 5 to tell a continuation from a new topic).
    `exclude_last`: the current request, left out when the history ends with it."""
    messages = list(_history(state).get("recent_messages") or [])
    if exclude_last is not None and messages and " ".join(str(messages[-1].get("content", "")).split()) == " ".join(
            exclude_last.split()):
        messages = messages[:-1]
    if limit is not None:
        messages = messages[-limit:]
    return "\n".join(f"{m.get('role', '?')}: {m.get('content', '')}" for m in messages)


def summary_text(state: OrchestratorState) -> str:
    """Compressed older conversation (evidence pack's `chat_history_summary`)."""
    blocks = _history(state).get("summary_blocks") or []
    return "\n".join(f"[{b.get('sequence_range', '?')}] {b.get('summary', '')}" for b in blocks)


def key_decisions(state: OrchestratorState, limit: int = 10) -> list[str]:
    """Decisions recorded in summary blocks, newest last (plan and finalize use them)."""
    decisions = [d for b in _history(state).get("summary_blocks") or [] for d in b.get("key_decisions") or []]
    return decisions[-limit:]


def full_conversation(state: OrchestratorState, *, exclude_last: str | None = None) -> str:
    """Summaries then recent messages: the whole context respond answers from (`exclude_last`:
    the current request, not repeated when the history ends with it)."""
    parts = []
    if summary := summary_text(state):
        parts.append(f"Earlier conversation (summaries):\n{summary}")
    if recent := recent_messages(state, exclude_last=exclude_last):
        parts.append(f"Recent messages:\n{recent}")
    return "\n\n".join(parts)


def total_message_count(state: OrchestratorState) -> int:
    return int(_history(state).get("total_message_count") or 0)
