"""respond (spec §7.3): a direct answer for advice and analysis requests."""

from __future__ import annotations

from typing import Any

from app.agents.workspace import render_environment
from app.graph import chat, prompts
from app.graph.nodes._common import (
    NodeRuntime,
    clarification_text,
    evidence_text,
    identity,
    task_of,
)
from app.graph.state import OrchestratorState


def answer_context(state: OrchestratorState) -> str:
    parts = [
        identity(state),
        state.get("project_context") or "",
        evidence_text(state),
        chat.full_conversation(state),
        f"User's clarification: {c}" if (c := clarification_text(state)) else "",
        render_environment(state.get("environment")) if state.get("environment") else "",
    ]
    return "\n\n".join(p for p in parts if p)


async def respond(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    messages = prompts.respond(
        query=task_of(state)["query"], context=answer_context(state), language=ctx.settings.response_language
    )
    answer = await ctx.llm.complete(messages)
    return {"final_result": answer.strip()}
