"""approve_plan: the user approves an epic plan or a generated design before any work starts."""

from __future__ import annotations

from typing import Any

from langgraph.types import interrupt

from app.graph.approval import is_approved
from app.graph.nodes._common import NodeRuntime, task_of
from app.graph.nodes.plan_epic import dependency_waves
from app.graph.state import OrchestratorState


async def approve_plan(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    goals = state.get("goals") or []
    waves = dependency_waves(goals)
    generative = state.get("task_category") == "generative"
    lines = [f"{i}. {g['title']}" + (f" (po: {', '.join(g['dependencies'])})" if g.get("dependencies") else "")
             for i, g in enumerate(goals, 1)]
    decision = interrupt(
        {
            "type": "approval_request",
            "action": "generative_design" if generative else "epic_plan",
            "description": f"Plán: {len(goals)} cílů ve {len(waves)} vlnách\n" + "\n".join(lines),
            "task_id": task_of(state)["id"],
            "goals_count": len(goals),
            "waves_count": len(waves),
        }
    )
    if is_approved(decision):
        runtime.context.context_store.save_nowait(
            task_of(state)["id"], "epic", "plan", f"{len(goals)} goals in {len(waves)} waves",
            {"goals": goals, "waves": waves},
        )
        return {}
    return {"final_result": "Plán byl zamítnut uživatelem; nic nebylo provedeno.", "goals": [], "steps": []}
