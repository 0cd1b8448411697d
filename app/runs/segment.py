"""What a run segment starts from: the graph input of a new run, and the LLM scope (escalation
policy and budget) every segment (start, resume, adoption) runs under, continued from the last."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, cast

from app.clients.kotlin import KotlinClient
from app.config import Settings
from app.graph.run_state import run_language
from app.graph.state import OrchestratorInput
from app.graph.state_parts import ChatHistoryDict, RulesDict, TaskDict
from app.llm.budget import BudgetLimits, BudgetTracker
from app.llm.scope import LlmScope, current_scope, scope_for
from app.persistence.runs import RunRecord
from app.runs.events import EventLog
from app.runs.lifecycle import RunIdentity, RunProgress
from app.schemas.domain import CodingTask
from app.schemas.kotlin import OrchestrateRequest, ProgressPush
from app.texts import texts
from app.texts.language import choose_language

log = logging.getLogger(__name__)


def restartable_request(record: RunRecord) -> OrchestrateRequest | None:
    """The stored request of a run that never reached a checkpoint, when it may start again: it was
    stored (records from before the field have none) and was not started again already."""
    if record.pending is None or record.restarts >= 1:
        return None
    try:
        return OrchestrateRequest.model_validate(record.pending)
    except ValueError as exc:  # stored by a version with another shape
        log.warning("the stored request of %s cannot start again: %s", record.thread_id, exc)
        return None


def default_limits(settings: Settings) -> BudgetLimits:
    return BudgetLimits(max_tokens=settings.budget_max_tokens, max_cost_usd=settings.budget_max_cost_usd,
                        max_seconds=settings.budget_max_seconds)


def initial_state(request: OrchestrateRequest, *, response_language: str | None = None,
                  limits: BudgetLimits | None = None) -> OrchestratorInput:
    """The graph input of a new run (checkpointed dicts: the shapes of `app/graph/state_parts.py`).

    Each input key is a document the checkpointer writes (one per key, on every run), so the
    request's read-only facts travel in `task` (names, the language and limits decided here) and
    a key left out reads as None all the same. Without `response_language` (a graph driven
    directly) the language is left to `run_language` and the run context's settings."""
    override = BudgetLimits(**request.budget.model_dump()) if request.budget else None
    task = CodingTask(
        id=request.task_id, client_id=request.client_id, project_id=request.project_id,
        workspace_path=request.workspace_path, query=request.query, agent_preference=request.agent_preference,
        client_name=request.client_name, project_name=request.project_name,
        language=choose_language(response_language, request.query) if response_language else None,
        budget_limits=(limits or BudgetLimits()).merged(override).model_dump(),
    )
    state: OrchestratorInput = {
        "task": cast(TaskDict, task.model_dump()),
        "rules": cast(RulesDict, request.rules.model_dump()),
        "environment": request.environment,
        "jervis_project_id": request.jervis_project_id,
        "chat_history": cast(ChatHistoryDict, request.chat_history.model_dump()) if request.chat_history else None,
    }
    return cast(OrchestratorInput, {key: value for key, value in state.items() if value is not None})


def segment_scope(*, settings: Settings, kotlin: KotlinClient, identity: RunIdentity, values: Mapping[str, Any],
                  previous: RunRecord | None, events: EventLog, progress: RunProgress) -> LlmScope:
    """Escalation policy and budget of this segment, continued from the run's record (`previous`:
    usage and percent so far, a cloud approval given); budget warnings go to SSE and Kotlin."""
    language = run_language(values, settings)
    t = texts(language)

    def warn(dimension: str, fraction: float) -> None:
        message = t.budget_warning.format(fraction=f"{fraction:.0%}", dimension=t.dimension(dimension))
        events.publish("budget_warning", {"dimension": dimension, "fraction": round(fraction, 3),
                                          "message": message})
        kotlin.push_progress_nowait(ProgressPush(task_id=identity.task_id, client_id=identity.client_id,
                                                 node=current_scope().node, message=message))

    task = values.get("task") or {}
    # A run started before the limits moved into `task` continues under the configured ones.
    limits = task.get("budget_limits")
    tracker = BudgetTracker(limits=BudgetLimits(**limits) if limits is not None else default_limits(settings),
                            warn_fraction=settings.budget_warn_fraction, on_warning=warn, language=language)
    if previous is not None:
        tracker.restore(previous.usage)
        progress.percent = max(progress.percent, previous.percent)
    return scope_for(values.get("rules") or {}, task.get("query", ""), task_id=identity.task_id,
                     cloud_approved=bool(previous and previous.cloud_approved), budget=tracker)
