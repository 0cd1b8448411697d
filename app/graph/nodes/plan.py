"""plan (spec §7.4): single tasks by action — respond, code, tracker_ops or mixed.

A single code task is one goal, the request itself, and its steps are planned in one call: a goal
plan first and a step plan after it cost two calls of the local model and let a small model split
one function into three goals. A request about one file needs no planner at all: one step carries
the request, in the user's own words, to the agent. A step plan the model cannot deliver (invalid
twice, or running to its cap) falls back to that one step, with a warning in the report.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from app.graph import chat, prompts
from app.graph.agent_handover import number_steps, workspace_root
from app.graph.prompt_context import planning_context
from app.graph.rules.request_scope import RequestScope, scope_of
from app.graph.rules.step_cleanup import cleaned_steps
from app.graph.run_state import NodeRuntime, cloud_allowed, reset_step_counters, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Intake
from app.graph.state_parts import GoalDict
from app.llm.errors import HeartbeatTimeoutError, LlmJsonError
from app.schemas.domain import CodingStep, StepPlan, StepType
from app.texts import texts
from app.texts.clip import clip

log = logging.getLogger(__name__)


def request_goal(query: str, complexity: str) -> GoalDict:
    """The one goal of a single task: the request, titled by its first line."""
    title = clip(" ".join(query.strip().splitlines()[0].split()) if query.strip() else query, 80)
    return {"id": "g1", "title": title, "description": "", "complexity": complexity, "dependencies": []}


async def plan(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    task = task_of(state)
    action = Intake.of(state).task_action or "respond"
    language = run_language(state, ctx.settings)
    base = {"current_goal_index": 0, "current_step_index": 0, **reset_step_counters()}
    if action == "respond":
        step = CodingStep(index=0, instructions=task["query"], step_type=StepType.RESPOND)
        goal = request_goal(task["query"], Intake.of(state).task_complexity or "simple")
        return base | {"goals": [goal], "steps": [step.model_dump(mode="json")]}
    goal = request_goal(task["query"], Intake.of(state).task_complexity or "medium")
    updates: dict[str, Any] = {}
    if action == "code":
        steps, warnings = await code_steps(state, runtime)
        updates = {"warnings": warnings} if warnings else {}
    else:
        decisions = "\n".join(chat.key_decisions(state, 10))
        planned = await ctx.llm.complete_json(
            prompts.plan_operations(query=task["query"], action=action, context=planning_context(state),
                                    decisions=decisions, language=language),
            StepPlan, max_tokens=prompts.Cap.STEPS)
        steps = cleaned_steps(planned.steps)
        if action == "tracker_ops":
            for step in steps:
                step.step_type = StepType.TRACKER
    return base | updates | {
        "goals": [goal],
        "steps": number_steps(steps, complexity=goal["complexity"], preference=task.get("agent_preference", "auto"),
                              mapping=ctx.settings.agent_selection, cloud_allowed=cloud_allowed(state)),
    }


async def code_steps(state: OrchestratorState, runtime: NodeRuntime) -> tuple[list[CodingStep], list[str]]:
    """The steps of a single code task and the report warnings of planning them."""
    ctx = runtime.context
    task = task_of(state)
    scope = await asyncio.to_thread(scope_of, task["query"], workspace_root(runtime, task["workspace_path"]))
    if scope.one_file:
        log.info("plan: one step on %s (the request names one file; no planning call)", scope.targets[0])
        return [request_step(task["query"], scope)], []
    language = run_language(state, ctx.settings)
    try:
        planned = await ctx.llm.complete_json(
            prompts.plan_steps(goal=task["query"], task=None, done_before="", context=planning_context(state),
                               language=language, files=scope.sources),
            StepPlan, max_tokens=prompts.Cap.STEPS)
    except (LlmJsonError, HeartbeatTimeoutError) as exc:  # a plan cut off, or a model that went silent
        log.warning("plan: no usable step plan (%s); the request is one step", exc)
        return [request_step(task["query"], scope)], [texts(language).warning_plan_fallback.format(error=exc)]
    return cleaned_steps(planned.steps), []


def request_step(query: str, scope: RequestScope) -> CodingStep:
    """One code step that is the request itself, on the files it names."""
    return CodingStep(instructions=query, files=scope.targets)
