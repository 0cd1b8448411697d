"""intake (spec §7.1): classify the request (`app/graph/rules/classification.py`): by rules where they
are certain (`INTAKE_BY_RULES`), else by the model held to the rules; a KB outage is noted, never
fatal."""

from __future__ import annotations

import asyncio
from typing import Any

from app.agents.workspace import render_environment
from app.graph import chat
from app.graph.agent_handover import workspace_root
from app.graph.prompt_context import clarification_text, identity
from app.graph.rules.classification import certain_classification, classify
from app.graph.rules.request_scope import scope_of
from app.graph.run_state import NodeRuntime, current_thread_id, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Attempts, Inputs, Intake
from app.kb.prefetch import fetch_project_context
from app.llm.scope import cloud_request
from app.schemas.domain import Classification


async def intake(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    task = task_of(state)
    language = run_language(state, ctx.settings)
    updates: dict[str, Any] = {}
    project_context = Intake.of(state).project_context
    if project_context is None:  # second round (after a clarification) reuses the first fetch
        started = ctx.kb_prefetch.take(current_thread_id())  # by the run driver, at dispatch
        kb = await started if started is not None else await fetch_project_context(
            ctx.kb, query=task["query"], client_id=task["client_id"], project_id=task.get("project_id")
        )
        project_context = kb.text
        updates |= {"project_context": kb.text, "kb_results": kb.sources, "kb_warnings": kb.warnings}
    root = workspace_root(runtime, task["workspace_path"])
    clarification = clarification_text(state)
    certain: Classification | None = None
    if ctx.settings.intake_by_rules and not clarification:
        scope = await asyncio.to_thread(scope_of, task["query"], root)
        certain = certain_classification(task["query"], scope, workspace=root is not None)
    warnings: list[str] = []
    if certain is not None:
        result = certain
    else:
        context = "\n\n".join(
            part for part in (identity(state), project_context, render_environment(Inputs.of(state).environment)
                              if Inputs.of(state).environment else "") if part
        )
        result, warnings = await classify(
            ctx.llm, query=task["query"], context=context, recent=chat.recent_messages(state, 5),
            clarification=clarification, language=language, workspace=root is not None)
    rounds = Attempts.of(state).clarification_rounds
    needs = (not result.goal_clear and bool(result.clarification_questions)
             and rounds < ctx.settings.clarification_max_rounds)
    return updates | {
        "task_category": str(result.task_category),
        "task_action": str(result.task_action),
        "external_refs": result.external_refs,
        "task_complexity": str(result.complexity),
        "needs_clarification": needs,
        "clarification_questions": result.clarification_questions if needs else [],
        "allow_cloud_prompt": cloud_request(task["query"]) is not None,
        **({"warnings": warnings} if warnings else {}),
    }
