"""review_epic: after an epic's last goal, one review of the whole change against every goal.

Each step was judged on its own (tests, a step review); what nobody has seen is whether the goals
together do what the request asked and fit one another. The reviewer reads the request, every
goal with its summary, the tests' outcome, the combined diff stat and the diff (bounded), and
answers in the review JSON. A rejection adds one fix-up goal with the issues as its description
(`EPIC_REVIEW_FIXUPS` of them per run, each reviewed again); when they are used up, the report
says what the review still found. No verdict (the model failed) is a warning, never a rejection.
"""

from __future__ import annotations

from typing import Any

from app.graph import verification
from app.graph.rules import step_changes
from app.graph.rules.report import tests_line
from app.graph.run_state import NodeRuntime, reset_step_counters, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Position, Waves, WorkDone
from app.graph.state_parts import EpicReviewDict, GoalDict
from app.schemas.domain import Complexity, ReviewVerdict
from app.texts import texts
from app.texts.clip import clip


def goals_text(state: OrchestratorState) -> str:
    summaries = {s["goal_id"]: s for s in WorkDone.of(state).goal_summaries or []}
    lines = []
    for n, goal in enumerate(Position.of(state).goals or [], 1):
        done = summaries.get(goal["id"])
        said = (clip(done["summary"], 300) + " (files: " + (", ".join(done.get("changed_files", [])) or "none") + ")"
                if done else "not done")
        lines.append(f"{n}. {goal['title']}: {said}")
    return "\n".join(lines)


def fixup_goal(goals: list[GoalDict], issues: list[str], title: str, round_: int) -> GoalDict:
    return {"id": f"review-fix-{round_}", "title": title, "description": clip("; ".join(issues), 500),
            "complexity": Complexity.SIMPLE.value, "dependencies": [g["id"] for g in goals]}


async def review_epic(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    task = task_of(state)
    language = run_language(state, ctx.settings)
    t = texts(language)
    goals = list(Position.of(state).goals or [])
    earlier = Waves.of(state).epic_review
    round_ = (earlier["round"] if earlier else 0) + 1
    workspace = ctx.workspaces.resolve(task["workspace_path"])
    base = step_changes.run_base(WorkDone.of(state).step_results or [])
    diff = await step_changes.diff(ctx.snapshots, workspace, base)
    stat = await step_changes.diff(ctx.snapshots, workspace, base, stat=True)
    verdict = await verification.review_whole(
        ctx, request=task["query"], goals=goals_text(state), tests=tests_line(state, t) or "-", stat=stat or "-",
        diff=diff, language=language)
    if not isinstance(verdict, ReviewVerdict):
        review: EpicReviewDict = {"status": "no_verdict", "issues": [], "summary": verdict, "round": round_,
                                  "goals": len(goals)}
        return {"epic_review": review, "warnings": [t.epic_review_no_verdict.format(reason=verdict)]}
    review = {"status": "approved" if verdict.approved else "rejected", "issues": verdict.issues,
              "summary": verdict.summary, "round": round_, "goals": len(goals)}
    if verdict.approved or round_ > ctx.settings.epic_review_fixups:
        return {"epic_review": review}
    issues = verdict.issues or [verdict.summary or t.epic_fixup_goal]
    fix = fixup_goal(goals, issues, t.epic_fixup_goal, round_)
    return {"epic_review": review, "goals": [*goals, fix], "current_goal_index": len(goals), "steps": [],
            "current_step_index": 0, **reset_step_counters()}
