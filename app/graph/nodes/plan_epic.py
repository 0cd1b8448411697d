"""plan_epic and design (spec §5.2): goals for large or new work, grouped in dependency waves.

They only plan; `approve_plan` asks the user. Keeping the interrupt in a node of its own means
the user approves exactly the plan that was shown (a resumed node re-runs from its start).
`design` also writes the design document the goals come from (`app/graph/rules/design_doc.py`), and
rewrites it when the user refuses it with a reason.
"""

from __future__ import annotations

import logging
from typing import Any

from app.agents.confinement import WorkspaceEscapeError
from app.graph import chat, prompts
from app.graph.prompt_context import planning_context
from app.graph.rules import design_doc, step_changes
from app.graph.run_state import NodeRuntime, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Attempts, Setbacks, Waves
from app.schemas.domain import DesignPlan, GoalPlan, RecoveryAction
from app.texts.clip import clip

log = logging.getLogger(__name__)


def _fresh(goals: list[dict[str, Any]]) -> dict[str, Any]:
    return {"goals": goals, "steps": [], "current_goal_index": 0, "current_step_index": 0}


async def plan_epic(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    task = task_of(state)
    messages = prompts.plan_goals(query=task["query"], context=planning_context(state),
                                  decisions="\n".join(chat.key_decisions(state)),
                                  language=run_language(state, ctx.settings), node="plan_epic")
    plan = await ctx.llm.complete_json(messages, GoalPlan, max_tokens=prompts.Cap.GOALS)
    return _fresh([g.model_dump(mode="json") for g in plan.goals])


async def design(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    """The design and its goals; after a refusal with a reason, the same document revised."""
    ctx = runtime.context
    task = task_of(state)
    earlier = Waves.of(state).design
    pending: dict[str, Any] = dict(Setbacks.of(state).recovery or {})
    objection = str(pending.get("failure") or "") if pending.get("action") == RecoveryAction.REPLANNING else ""
    workspace = ctx.workspaces.resolve(task["workspace_path"])
    messages = prompts.design(query=task["query"], context=planning_context(state),
                              language=run_language(state, ctx.settings),
                              earlier=design_doc.read(workspace, earlier["path"]) if earlier else "",
                              objection=objection)
    plan = await ctx.llm.complete_json(messages, DesignPlan, max_tokens=prompts.Cap.DESIGN)
    updates = _fresh([g.model_dump(mode="json") for g in plan.goals])
    if objection:
        updates |= {"recovery": None, "replans": Attempts.of(state).replans + 1}
    path = earlier["path"] if earlier else design_doc.place(workspace, task["query"])
    title = clip((task["query"].strip().splitlines() or ["Design"])[0], 100)
    try:
        design_doc.write(workspace, path, design_doc.render(plan, title=title))
    except (OSError, WorkspaceEscapeError) as exc:  # the goals still stand; the gate shows no document
        log.warning("the design document %s could not be written: %s", path, exc)
        return updates | {"design": None}
    tree = await step_changes.content_now(ctx.snapshots, workspace)
    summary = plan.summary or "; ".join(g.title for g in plan.goals)
    return updates | {"design": {"path": path, "summary": clip(summary, 300), "tree": tree}}
