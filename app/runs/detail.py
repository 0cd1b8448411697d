"""One run as a person reads it (`GET /runs/{thread_id}`, the console's run page): pure
projections of the run record and the checkpoint's values, no I/O.

The plan shows every goal with its wave, its steps and each step's attempts: steps of finished
goals come from their results; the goal being worked on shows its planned steps too, those not
reached yet as waiting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.graph.rules.goals import finished_ids, plan_order
from app.graph.rules.progress import agent_label
from app.persistence.runs import RunRecord
from app.runs.status import first_line, run_summary
from app.schemas.runs import BudgetUse, GoalView, Question, RunDetail, StepAttempt, StepView
from app.texts.clip import clip

#: The interrupt answered in words rather than yes / no (Kotlin sends approved=true with the text).
CLARIFY_ACTION = "clarify"
TITLE_CHARS = 120


def run_detail(record: RunRecord, values: Mapping[str, Any], *, node: str | None = None,
               running: bool = False, live: bool = False,
               goals_in_wave: Mapping[str, Mapping[str, Any]] | None = None) -> RunDetail:
    """`running`: the run executes on this pod now (`node` is its node), so its current goal and
    step are running rather than waiting. `goals_in_wave`: the own state of each goal of a wave
    still running (by goal id), where its steps and attempts are until the wave is merged."""
    task = values.get("task") or {}
    question = None
    if record.status == "interrupted":
        action = record.interrupt_action or "unknown"
        question = Question(id=record.interrupt_id, action=action, description=record.interrupt_description or "",
                            clarification=action == CLARIFY_ACTION)
    report = record.report or (record.summary if record.status == "done" else None) or values.get("final_result")
    return RunDetail(
        **run_summary(record).model_dump(), query=task.get("query") or None, node=node or None,
        question=question, answer=record.answer, goals=plan_view(values, running=running, goals_in_wave=goals_in_wave),
        budget=budget_use(record.usage, task.get("budget_limits")), report=report or None,
        warnings=[str(w) for w in values.get("warnings") or []][-20:], live=live,
    )


def plan_view(values: Mapping[str, Any], *, running: bool,
              goals_in_wave: Mapping[str, Mapping[str, Any]] | None = None) -> list[GoalView]:
    goals = list(values.get("goals") or [])
    if not goals:
        return []
    wave_of = {gid: number for number, wave in enumerate(plan_order(goals).waves, 1) for gid in wave}
    done = finished_ids(values)
    summaries = {s.get("goal_id"): s.get("summary") for s in values.get("goal_summaries") or []}
    in_wave = set((values.get("wave") or {}).get("goals") or [])
    current = int(values.get("current_goal_index") or 0)
    views = []
    for index, goal in enumerate(goals):
        gid = str(goal.get("id"))
        is_current = not in_wave and index == current and gid not in done
        own = (goals_in_wave or {}).get(gid) if gid in in_wave and gid not in done else None
        if own is not None:  # a goal of a wave, in its own subgraph
            steps = steps_view(own, index, planned=own.get("steps"), running=running)
        else:
            steps = steps_view(values, index, planned=values.get("steps") if is_current else None,
                               running=running and is_current)
        # every planned step finished: done, though its summary is written later (at the commit gate)
        finished = gid in done or ((is_current or own is not None) and bool(steps)
                                   and all(s.status in ("done", "skipped") for s in steps))
        status = "done" if finished else "running" if running and (gid in in_wave or is_current) else "waiting"
        views.append(GoalView(
            id=gid, title=clip(str(goal.get("title") or gid), TITLE_CHARS),
            dependencies=list(goal.get("dependencies") or []), wave=wave_of.get(gid), status=status,
            summary=summaries.get(gid) or None, steps=steps))
    return views


def steps_view(values: Mapping[str, Any], goal_index: int, *, planned: Sequence[Mapping[str, Any]] | None,
               running: bool) -> list[StepView]:
    """The steps of one goal: those with results, and (for the goal being worked on) its plan."""
    results = [r for r in values.get("step_results") or [] if int(r.get("goal_index", 0)) == goal_index]
    skipped = {int(s.get("step_index", -1)) for s in values.get("skipped") or []
               if int(s.get("goal_index", -1)) == goal_index}
    by_step: dict[int, list[Mapping[str, Any]]] = {}
    for result in results:
        by_step.setdefault(int(result.get("step_index", 0)), []).append(result)
    titles = {int(s.get("index", i)): first_line(str(s.get("instructions") or ""), TITLE_CHARS)
              for i, s in enumerate(planned or [])}
    kinds = {int(s.get("index", i)): str(s.get("step_type") or "code") for i, s in enumerate(planned or [])}
    current_step = int(values.get("current_step_index") or 0)
    views = []
    for index in sorted(set(by_step) | set(titles)):
        tried = sorted(by_step.get(index, []), key=lambda r: int(r.get("attempt", 1)))
        attempts = [StepAttempt(attempt=int(r.get("attempt", 1)), success=bool(r.get("success")),
                                summary=str(r.get("summary") or ""), changed_files=list(r.get("changed_files") or []),
                                agent=agent_label(str(r.get("agent_type")), r.get("program"), r.get("fallback"))
                                if r.get("agent_type") else None) for r in tried]
        if index in skipped:
            status = "skipped"
        elif tried and tried[-1].get("success"):
            status = "done"
        elif planned is not None and index == current_step and running:
            status = "running"  # its first attempt, or a retry after a failed one
        else:
            status = "failed" if tried else "waiting"
        tried_title = clip(str(tried[-1].get("title") or ""), TITLE_CHARS) if tried else ""
        title = titles.get(index) or tried_title or f"#{index + 1}"
        kind = kinds.get(index) or (str(tried[-1].get("step_type") or "code") if tried else "code")
        views.append(StepView(index=index, title=title, step_type=kind, status=status, attempts=attempts))
    return views


def budget_use(usage: Mapping[str, Any], limits: Mapping[str, Any] | None) -> BudgetUse:
    limits = limits or {}
    return BudgetUse(tokens=int(usage.get("tokens", 0)), max_tokens=limits.get("max_tokens"),
                     cost_usd=float(usage.get("cost_usd", 0.0)), max_cost_usd=limits.get("max_cost_usd"),
                     seconds=float(usage.get("seconds", 0.0)), max_seconds=limits.get("max_seconds"))

