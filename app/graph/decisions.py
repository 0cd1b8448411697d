"""Carrying out a recovery decision (reflect's or the user's): the state changes it implies, and
undoing the failed step's changes when the step is given up (skip, replan, stop), so a later
commit holds only finished work."""

from __future__ import annotations

import logging
from typing import Any

from app.graph.rules import failure_recovery, step_changes
from app.graph.run_state import NodeRuntime, current_step, run_language, task_of
from app.graph.state import FailureRecord, OrchestratorState, SkipRecord
from app.schemas.domain import CodingStep, Recovery, RecoveryAction
from app.texts import texts
from app.texts.clip import clip

log = logging.getLogger(__name__)


async def apply_decision(state: OrchestratorState, runtime: NodeRuntime, decision: Recovery,
                         signature: str = "") -> dict[str, Any]:
    """State changes of a recovery decision (shared by reflect and ask_user; `signature`: the
    failed attempt's, from reflect)."""
    step = CodingStep.model_validate(current_step(state))
    last = state["step_results"][-1]
    record: FailureRecord = {"goal_index": decision.goal_index, "step_index": decision.step_index,
                             "attempt": decision.attempt, "title": clip(step.instructions, 120),
                             "reason": clip(decision.failure, 300), "action": decision.action.value}
    if signature:
        record["signature"] = signature
    updates: dict[str, Any] = {"recovery": decision.model_dump(mode="json"), "failures": [record]}
    if decision.action in failure_recovery.RETRIES:
        return updates | {"attempt": decision.attempt + 1}
    if decision.action in (RecoveryAction.SKIP_STEP, RecoveryAction.REPLANNING, RecoveryAction.STOP):
        workspace = runtime.context.workspaces.resolve(task_of(state)["workspace_path"])
        undone = await step_changes.discard(runtime.context.snapshots, workspace, last.get("base_tree"))
        if undone:
            log.info("undid the failed step's changes: %s", ", ".join(undone[:10]))
    if decision.action == RecoveryAction.SKIP_STEP:
        skip: SkipRecord = {"goal_index": decision.goal_index, "step_index": decision.step_index,
                            "title": clip(step.instructions, 120), "reason": clip(decision.failure, 300)}
        updates["skipped"] = [skip]
    elif decision.action == RecoveryAction.STOP:
        t = texts(run_language(state, runtime.context.settings))
        template = t.halt_user_stop if decision.source == "user" else t.halt_exhausted
        message = template.format(step=decision.step_index + 1, goal=decision.goal_index + 1,
                                  attempts=decision.attempt, reason=clip(decision.failure, 300))
        updates["halt"] = {"kind": "user_stop" if decision.source == "user" else "exhausted", "message": message}
    return updates
