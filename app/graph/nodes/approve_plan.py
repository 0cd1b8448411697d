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

from app.graph.rules import design_doc
from app.graph.rules.approval import classify_modification
from app.graph.rules.goals import GoalOrder, plan_order
from app.graph.rules.progress import tests_note
from app.graph.run_state import NodeRuntime, run_key, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Attempts, Intake, Position, UserTerms, Waves
from app.graph.state_parts import GoalDict
from app.graph.user_answers import read_approval
from app.schemas.domain import Complexity, Recovery, RecoveryAction
from app.texts import Texts, texts
from app.texts.clip import clip


def added_goal(goals: Sequence[GoalDict], text: str) -> GoalDict:
    """The work the user added while approving: a last goal after all the others."""
    ids = {g["id"] for g in goals}
    goal_id, n = "user", 1
    while goal_id in ids:
        n += 1
        goal_id = f"user-{n}"
    return {"id": goal_id, "title": clip(text, 80), "description": text, "complexity": Complexity.SIMPLE.value,
            "dependencies": [g["id"] for g in goals]}


def plan_description(order: GoalOrder, *, finished: int, header: str, t: Texts) -> str:
    """The plan as it will run: the unfinished goals numbered in wave order under their waves, each
    with the goals it waits for, then every dependency the plan could not keep."""
    todo = order.goals[finished:]
    number = {g["id"]: n for n, g in enumerate(todo, 1)}
    by_id = {g["id"]: g for g in todo}
    lines = [header]
    for n, wave in enumerate(order.waves, 1):
        lines.append(t.plan_gate_wave.format(n=n))
        for gid in wave:
            after = ", ".join(str(number[d]) for d in by_id[gid].get("dependencies", []) if d in number)
            lines.append(f"{number[gid]}. {by_id[gid]['title']}" + (" " + t.plan_gate_after.format(goals=after)
                                                                      if after else ""))
    for removed in order.removed:
        text = t.plan_gate_cycle if removed.cycle else t.plan_gate_unknown_dependency
        lines.append(text.format(goal=number.get(removed.goal, removed.goal),
                                 dependency=number.get(removed.dependency, removed.dependency)))
    return "\n".join(lines)


async def approve_plan(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    finished = Position.of(state).current_goal_index
    order = plan_order(Position.of(state).goals or [], finished=finished)
    goals, waves = order.goals, order.waves
    generative = Intake.of(state).task_category == "generative"
    t = texts(run_language(state, ctx.settings))
    todo = len(goals) - finished
    header = (t.plan_gate_replanned.format(reason=state["replan_reason"], goals=todo, waves=len(waves))
              if UserTerms.of(state).replan_reason else t.plan_gate.format(goals=todo, waves=len(waves)))
    description = plan_description(order, finished=finished, header=header, t=t)
    if tests := tests_note(state, t):  # what will judge every goal's work
        description = f"{description}\n{tests[:1].upper()}{tests[1:]}"
    drafted = Waves.of(state).design
    if generative and drafted:  # the document the goals come from, before them
        description = t.design_gate.format(path=drafted["path"], summary=drafted["summary"]) + "\n\n" + description
    decision = interrupt(
        {
            "type": "approval_request",
            "action": "generative_design" if generative else "epic_plan",
            "description": description,
            "task_id": task_of(state)["id"],
            "goals_count": todo,
            "waves_count": len(waves),
            **({"design_path": drafted["path"]} if generative and drafted else {}),
        }
    )
    answer = await read_approval(ctx.llm, decision, question=description)
    if answer.approved:
        updates: dict[str, Any] = {"replan_reason": None, "goals": goals}  # the approved run order
        if answer.modification:
            modification = classify_modification(answer.modification)
            if modification.kind == "add_step":
                goals = [*goals, added_goal(goals, modification.text)]
                waves = [*waves, [goals[-1]["id"]]]
                updates["goals"] = goals
            else:
                updates["user_conditions"] = [modification.text]
        ctx.context_store.save_nowait(run_key(state), "epic", "plan", f"{len(goals)} goals in {len(waves)} waves",
                                      {"goals": goals, "waves": waves})
        return updates
    if answer.reason and Attempts.of(state).replans < ctx.settings.recovery_max_replans:
        ask = Recovery(action=RecoveryAction.REPLANNING, failure=answer.reason, source="user")
        return {"recovery": ask.model_dump(mode="json"), "user_conditions": [answer.reason]}
    if drafted:  # refused for good: the document it wrote goes too
        design_doc.discard(ctx.workspaces.resolve(task_of(state)["workspace_path"]), drafted["path"])
    return {"final_result": t.plan_rejected, "goals": [], "steps": [], "design": None}
