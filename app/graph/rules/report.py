"""The honest account of a run: what was finished, skipped, failed and is left, and where the
work is (branch, commit). finalize writes it into the report and the error text; the run
manager uses the same lines when a run is cancelled or crashes, so Kotlin (which shows only
the `error` text of a failed run) always learns what was done before the failure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.graph.rules.goals import finished_ids
from app.graph.state_access import Outcome, Position, Setbacks, UserTerms, Waves, WorkDone
from app.texts import Texts
from app.texts.clip import clip

#: Kotlin shows the error text in the chat: long enough for the facts, short enough to read.
ERROR_TEXT_LIMIT = 1500


def done_slots(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The last successful result of every (goal, step): retried steps count once."""
    done: dict[tuple[int, int], dict[str, Any]] = {}
    for result in WorkDone.of(state).step_results or []:
        if result.get("success"):
            done[(result.get("goal_index", 0), result["step_index"])] = dict(result)
    return list(done.values())


def changed_files(state: Mapping[str, Any]) -> list[str]:
    """Files changed by successful steps, in first-seen order (what a commit may stage)."""
    seen: dict[str, None] = {}
    if Waves.of(state).design:  # a generative request's design document, written before any step
        seen[state["design"]["path"]] = None
    for result in WorkDone.of(state).step_results or []:
        if result.get("success"):
            for path in result.get("changed_files", []):
                seen.setdefault(path, None)
    return list(seen)


def done_work(state: Mapping[str, Any], t: Texts) -> str:
    """"Done: <what the finished steps were asked to do>." (first lines, at most three)."""
    firsts = [(str(r.get("title") or r.get("summary") or "").strip().splitlines() or [""])[0]
              for r in done_slots(state) if r.get("step_type", "code") != "respond"]
    titles = [clip(title, 100, one_line=True).rstrip(".") for title in dict.fromkeys(firsts) if title]
    if not titles:
        return ""
    return t.report_done_work.format(what="; ".join(titles[:3]) + ("…" if len(titles) > 3 else ""))


def tests_line(state: Mapping[str, Any], t: Texts) -> str:
    """Whether the project's tests passed on the last step (`require_tests`)."""
    evaluation: Mapping[str, Any] = Setbacks.of(state).evaluation or {}
    checks = evaluation.get("checks") or []
    passed = [c for c in checks if c.get("name") == "tests" and c.get("status") == "passed"]
    return t.report_tests_passed if passed else ""


def attempted_slots(state: Mapping[str, Any]) -> int:
    return len({(r.get("goal_index", 0), r["step_index"]) for r in WorkDone.of(state).step_results or []})


def finished_goal_titles(state: Mapping[str, Any]) -> list[str]:
    return [str(s.get("title", "")) for s in WorkDone.of(state).goal_summaries or []]


def left_over(state: Mapping[str, Any]) -> list[str]:
    """Unfinished steps of the current goal, then the goals not started."""
    goals = Position.of(state).goals or []
    index = int(Position.of(state).current_goal_index or 0)
    finished = finished_ids(state)
    done = {(r.get("goal_index", 0), r["step_index"]) for r in done_slots(state)}
    skipped = {(s["goal_index"], s["step_index"]) for s in Setbacks.of(state).skipped or []}
    left: list[str] = []
    if index < len(goals) and goals[index].get("id") not in finished:
        for step in Position.of(state).steps or []:
            key = (index, int(step.get("index", 0)))
            if key not in done and key not in skipped:
                left.append(clip(step.get("instructions", ""), 60, one_line=True))
    left += [clip(g.get("title", ""), 60, one_line=True) for g in goals[index + 1:] if g.get("id") not in finished]
    return left


def report_lines(state: Mapping[str, Any], t: Texts, *, include_failure: bool = True) -> list[str]:
    skipped, *other_notices = notice_lines(state, t, keep_empty=True)
    lines = [t.report_done_steps.format(ok=len(done_slots(state)), total=attempted_slots(state))]
    if goals := finished_goal_titles(state):
        lines.append(t.report_finished_goals.format(goals=", ".join(clip(g, 60, one_line=True) for g in goals)))
    if files := changed_files(state):
        lines.append(t.report_files.format(files=", ".join(files)))
    lines.append(skipped)
    failures = Setbacks.of(state).failures or []
    if include_failure and failures and (Setbacks.of(state).halt or Outcome.of(state).error):
        last = failures[-1]
        what = f"{last['goal_index'] + 1}.{last['step_index'] + 1} {clip(last['title'], 50, one_line=True)}"
        lines.append(t.report_failed.format(what=what, reason=clip(last["reason"], 200, one_line=True)))
    if left := left_over(state):
        lines.append(t.report_left.format(what="; ".join(left[:8]) + ("…" if len(left) > 8 else "")))
    if review := epic_review_line(state, t):
        lines.append(review)
    if conflicted := wave_conflicts(state):
        lines.append(t.report_wave_conflicts.format(goals=", ".join(conflicted)))
    if Outcome.of(state).commit_sha and Outcome.of(state).branch:
        lines.append(t.report_branch.format(branch=state["branch"], sha=str(state["commit_sha"])[:12]))
    elif changed_files(state) and Outcome.of(state).git_outcome not in ("commit_rejected", "not_a_repo"):
        lines.append(t.report_not_committed)
    return [line for line in [*lines, *other_notices] if line]


def wave_conflicts(state: Mapping[str, Any]) -> list[str]:
    """Titles of the goals whose work conflicted in their wave and was done again alone."""
    titles = {g.get("id"): g.get("title", "") for g in Position.of(state).goals or []}
    ids = dict.fromkeys(r["goal_id"] for r in Waves.of(state).wave_goals or [] if r.get("status") == "conflict")
    return [clip(titles.get(gid) or gid, 80, one_line=True) for gid in ids]


def epic_review_line(state: Mapping[str, Any], t: Texts) -> str:
    """What the review of an epic's whole change concluded (its last round)."""
    review: Mapping[str, Any] = Waves.of(state).epic_review or {}
    if review.get("status") == "approved":
        return t.report_epic_review_approved.format(summary=clip(review.get("summary") or "-", 200, one_line=True))
    if review.get("status") == "rejected":
        issues = "; ".join(clip(i, 160, one_line=True) for i in review.get("issues") or [])
        issues = issues or clip(review.get("summary") or "-", 200, one_line=True)
        return t.report_epic_review_rejected.format(issues=issues)
    return ""


def notice_lines(state: Mapping[str, Any], t: Texts, *, keep_empty: bool = False) -> list[str]:
    """What every report must say, however it was written: skipped steps, warnings (tests not
    run, review without verdict, classification fallback) and the user's conditions, in that
    order ("" for each absent one with `keep_empty`)."""
    skipped, warnings = Setbacks.of(state).skipped, Outcome.of(state).warnings
    conditions = UserTerms.of(state).user_conditions
    lines = [
        t.report_skipped.format(steps="; ".join(
            f"{s['goal_index'] + 1}.{s['step_index'] + 1} {clip(s['title'], 50, one_line=True)} "
            f"({clip(s['reason'], 80, one_line=True)})"
            for s in skipped)) if skipped else "",
        t.report_warnings.format(warnings="; ".join(dict.fromkeys(clip(w, 160, one_line=True) for w in warnings)))
        if warnings else "",
        t.report_conditions.format(conditions="; ".join(dict.fromkeys(conditions))) if conditions else "",
    ]
    return lines if keep_empty else [line for line in lines if line]


def error_text(problem: str, state: Mapping[str, Any], t: Texts, *, limit: int = ERROR_TEXT_LIMIT) -> str:
    """The `error` of a failed run: the problem first, then what was done and what is left."""
    facts = " ".join(report_lines(state, t, include_failure=False)) if WorkDone.of(state).step_results else ""
    return clip(f"{problem.rstrip('.')}. {facts}" if facts else problem, limit, one_line=True)
