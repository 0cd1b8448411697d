"""approve_plan: the user approves an epic plan or a generated design before any work starts.

The answer may carry a condition: "ano, ale přidej testy" adds a goal at the end, any other
condition ("ano, ale bez nové závislosti") reaches every later plan and agent; a refusal with a
reason ("ne, udělej to bez nové závislosti") replans with it (within RECOVERY_MAX_REPLANS)
instead of ending the run. A bare "ne" ends it, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.types import interrupt

from app.graph.answers import read_approval
from app.graph.approval import classify_modification
from app.graph.goals import dependency_waves
from app.graph.nodes._common import NodeRuntime, clip, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_parts import GoalDict
from app.schemas.domain import Complexity, Recovery, RecoveryAction
from app.texts import texts


def added_goal(goals: Sequence[GoalDict], text: str) -> GoalDict:
    """The work the user added while approving: a last goal after all the others."""
    ids = {g["id"] for g in goals}
    goal_id, n = "user", 1
    while goal_id in ids:
        n += 1
        goal_id = f"user-{n}"
    return {"id": goal_id, "title": clip(text, 80), "description": text, "complexity": Complexity.SIMPLE.value,
            "dependencies": [g["id"] for g in goals]}


async def approve_plan(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    goals = state.get("goals") or []
    waves = dependency_waves(goals)
    generative = state.get("task_category") == "generative"
    t = texts(run_language(state, ctx.settings))
    lines = [f"{i}. {g['title']}" + (" " + t.plan_gate_after.format(goals=", ".join(g["dependencies"]))
                                     if g.get("dependencies") else "")
             for i, g in enumerate(goals, 1)]
    header = (t.plan_gate_replanned.format(reason=state["replan_reason"], goals=len(goals), waves=len(waves))
              if state.get("replan_reason") else t.plan_gate.format(goals=len(goals), waves=len(waves)))
    description = header + "\n" + "\n".join(lines)
    decision = interrupt(
        {
            "type": "approval_request",
            "action": "generative_design" if generative else "epic_plan",
            "description": description,
            "task_id": task_of(state)["id"],
            "goals_count": len(goals),
            "waves_count": len(waves),
        }
    )
    answer = await read_approval(ctx.llm, decision, question=description)
    if answer.approved:
        updates: dict[str, Any] = {"replan_reason": None}
        if answer.modification:
            modification = classify_modification(answer.modification)
            if modification.kind == "add_step":
                goals = [*goals, added_goal(goals, modification.text)]
                waves = dependency_waves(goals)
                updates["goals"] = goals
            else:
                updates["user_conditions"] = [modification.text]
        ctx.context_store.save_nowait(task_of(state)["id"], "epic", "plan", f"{len(goals)} goals in {len(waves)} waves",
                                      {"goals": goals, "waves": waves})
        return updates
    if answer.reason and state.get("replans", 0) < ctx.settings.recovery_max_replans:
        ask = Recovery(action=RecoveryAction.REPLANNING, failure=answer.reason, source="user")
        return {"recovery": ask.model_dump(mode="json"), "user_conditions": [answer.reason]}
    return {"final_result": t.plan_rejected, "goals": [], "steps": []}
