"""How far a run is, in percent, from the state at a node's start (progress pushes, /status).

Before the work: fixed marks for classification and planning (0–10). The work itself spans
10–90: goals share it equally, a goal's steps share the goal's part, and a step moves within its
share with every execute / evaluate phase of every attempt (k phases → k/(k+2) of the step, so a
retry moves forward, never back, and never past the step). Git operations are 92; the final
report of a run that succeeds is 100. A replan can shrink the done fraction (more steps than
before): the caller keeps the highest value reported (`progress_floor` in the state survives a
restart), so the number never decreases within a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from app.graph.rules.goals import finished_ids
from app.graph.rules.test_plan import from_plan
from app.graph.state_access import Attempts, Outcome, Position, Setbacks, Tests, UserTerms, Waves
from app.texts import Texts
from app.texts.language import detect_language

_BEFORE_WORK = {"intake": 2.0, "clarify": 3.0, "evidence_pack": 5.0, "plan": 8.0, "plan_epic": 8.0,
                "design": 8.0, "approve_plan": 10.0, "respond": 50.0}
_AFTER_ATTEMPT = frozenset({"evaluate", "reflect", "ask_user", "replan"})
_STEP_DONE = frozenset({"advance_step", "advance_goal"})
_GOAL_START = frozenset({"select_goal", "plan_steps"})  # a goal's share starts at zero, whatever steps linger
WORK_START, WORK_END, GIT, DONE = 10.0, 90.0, 92.0, 100.0


def goals_done(state: Mapping[str, Any]) -> int:
    """Goals of the plan with a summary (goals of a wave finish in any order)."""
    done = finished_ids(state)
    return sum(1 for g in Position.of(state).goals or [] if g.get("id") in done)


def goal_share(state: Mapping[str, Any], node: str) -> float:
    """0..1: how far the current goal is, from its steps and attempts (0 once it is done)."""
    goals = Position.of(state).goals or []
    index = int(Position.of(state).current_goal_index or 0)
    steps = Position.of(state).steps or []
    if not steps or index >= len(goals) or goals[index].get("id") in finished_ids(state) or node in _GOAL_START:
        return 0.0
    step = min(int(Position.of(state).current_step_index or 0), len(steps))
    if node in _STEP_DONE:
        partial = 1.0
    else:
        attempt = max(1, int(Attempts.of(state).attempt or 1))
        phases = 2 * (attempt - 1) + (1 if node in _AFTER_ATTEMPT else 0)
        partial = phases / (phases + 2)
    return min(1.0, (step + partial) / len(steps))


def work_fraction(state: Mapping[str, Any], node: str) -> float:
    """0..1: goals done plus the current goal's share."""
    return min(1.0, (goals_done(state) + goal_share(state, node)) / max(1, len(Position.of(state).goals or [])))


def wave_percent(state: Mapping[str, Any], shares: Iterable[float]) -> float:
    """The raw percent while goals run side by side: goals done plus each running goal's share."""
    fraction = (goals_done(state) + sum(shares)) / max(1, len(Position.of(state).goals or []))
    return round(WORK_START + (WORK_END - WORK_START) * min(1.0, fraction), 1)


def percent(state: Mapping[str, Any], node: str) -> float:
    """The raw percent at the start of `node` (the caller applies the never-decrease rule)."""
    if node in _BEFORE_WORK and not (node == "plan" and Position.of(state).steps):
        return _BEFORE_WORK[node]
    if node == "git_operations":
        return GIT
    if node == "review_epic":
        return WORK_END
    if node == "finalize":
        failed = Outcome.of(state).error or Setbacks.of(state).halt
        return GIT if failed else DONE
    return round(WORK_START + (WORK_END - WORK_START) * work_fraction(state, node), 1)


def monotonic(previous: float, state: Mapping[str, Any], node: str) -> float:
    """`percent`, never below what was already reported (this segment's or a replan's floor)."""
    return max(previous, float(UserTerms.of(state).progress_floor or 0.0), percent(state, node))


def message(state: Mapping[str, Any], node: str, t: Texts, language: str | None = None) -> str:
    """The progress message of a node start, with where the run stands (goal, step, attempt)."""
    goals, steps = Position.of(state).goals or [], Position.of(state).steps or []
    attempt = int(Attempts.of(state).attempt or 1)
    fields = {"goal": int(Position.of(state).current_goal_index or 0) + 1, "goals": max(1, len(goals)),
              "step": int(Position.of(state).current_step_index or 0) + 1, "steps": max(1, len(steps)),
              "attempt": attempt, **_wave_fields(state)}
    retry = node == "execute_step" and attempt > 1
    text = str(t.node_execute_retry if retry else getattr(t, f"node_{node}", node)).format(**fields)
    why = retry_reason(Setbacks.of(state).recovery or {}, language) if retry else ""
    if why:  # the reflection's conclusion (or the failure's first line) reaches Kotlin with the retry
        text = f"{text.rstrip('…')}: {why[:120]}"
    elif node in _SAYS_TESTS and (tests := tests_note(state, t)):  # what will judge the work, from the start
        text = f"{text.rstrip('…')} ({tests})"
    return text


#: Node starts whose progress message names the test command (`require_tests`).
_SAYS_TESTS = frozenset({"plan", "plan_epic", "design", "plan_steps", "evaluate"})


def tests_note(state: Mapping[str, Any], t: Texts) -> str:
    """"tests: python3 -m pytest -q (Python test files at the root)" once find_tests decided, else ""."""
    plan = Tests.of(state).test_plan
    command = from_plan(plan)
    if plan is None or command is None:
        return ""
    return t.tests_found.format(command=command.label()[:120], source=plan.get("source") or "-")


def _wave_fields(state: Mapping[str, Any]) -> dict[str, Any]:
    """The wave running now and its goals' titles, for the texts of goals side by side."""
    wave: Mapping[str, Any] = Waves.of(state).wave or {}
    titles = {g.get("id"): g.get("title", "") for g in Position.of(state).goals or []}
    return {"wave": wave.get("number", 0), "running": ", ".join(titles.get(gid, gid) for gid in wave.get("goals", []))}


def retry_reason(decision: Mapping[str, Any], language: str | None) -> str:
    """Why a step is tried again, in the run's language: the reflection's root cause or hint when
    the model wrote it in that language, else the failure's first line (the check's own words,
    from the run's catalogue, not a test runner's English output)."""
    for key in ("root_cause", "hint"):
        text = " ".join(str(decision.get(key) or "").split())
        if text and (language is None or detect_language(text, default=language) == language):
            return text
    lines = str(decision.get("failure") or "").strip().splitlines()
    return " ".join(lines[0].split()).rstrip(":") if lines else ""


def agent_label(agent: str, program: str | None, fallback: str | None = None) -> str:
    """What runs a step, for people: `aider`, or `openhands → aider` when the local runner maps the
    planned type to another program, with the fallback's reason when that is why."""
    label = agent if not program or program == agent else f"{agent} → {program}"
    return f"{label} ({fallback})" if fallback else label
