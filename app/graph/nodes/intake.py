"""intake (spec §7.1): classify the request; a KB outage is noted, never fatal."""

from __future__ import annotations

from typing import Any

from app.agents.workspace import render_environment
from app.graph import chat, prompts
from app.graph.nodes._common import NodeRuntime, clarification_text, identity, task_of
from app.graph.state import OrchestratorState
from app.kb.prefetch import fetch_project_context
from app.llm.scope import cloud_request
from app.schemas.domain import Classification

MAX_CLARIFICATION_ROUNDS = 2

async def intake(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    task = task_of(state)
    updates: dict[str, Any] = {}
    project_context = state.get("project_context")
    if project_context is None:  # second round (after a clarification) reuses the first fetch
        kb = await fetch_project_context(
            ctx.kb, query=task["query"], client_id=task["client_id"], project_id=task.get("project_id")
        )
        project_context = kb.text
        updates |= {"project_context": kb.text, "kb_results": kb.sources, "kb_warnings": kb.warnings}
    context = "\n\n".join(
        part for part in (identity(state), project_context, render_environment(state.get("environment"))
                          if state.get("environment") else "") if part
    )
    messages = prompts.intake(
        query=task["query"],
        context=context,
        recent=chat.recent_messages(state, 5),
        clarification=clarification_text(state),
        language=ctx.settings.response_language,
    )
    result = await ctx.llm.complete_json(messages, Classification)
    rounds = state.get("clarification_rounds", 0)
    needs = not result.goal_clear and bool(result.clarification_questions) and rounds < MAX_CLARIFICATION_ROUNDS
    return updates | {
        "task_category": str(result.task_category),
        "task_action": str(result.task_action),
        "external_refs": result.external_refs[:10],
        "task_complexity": str(result.complexity),
        "needs_clarification": needs,
        "clarification_questions": result.clarification_questions if needs else [],
        "allow_cloud_prompt": cloud_request(task["query"]) is not None,
    }
