"""respond (spec §7.3): a direct answer for advice and analysis requests."""

from __future__ import annotations

from typing import Any

from app.graph import prompts
from app.graph.prompt_context import answer_context
from app.graph.run_state import NodeRuntime, run_language, task_of
from app.graph.state import OrchestratorState


async def respond(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    messages = prompts.respond(
        query=task_of(state)["query"], context=answer_context(state), language=run_language(state, ctx.settings)
    )
    answer = await ctx.llm.complete(messages, max_tokens=prompts.Cap.ANSWER)
    return {"final_result": answer.strip()}
