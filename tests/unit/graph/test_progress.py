"""Run progress in percent and its messages (app/graph/rules/progress.py)."""

from __future__ import annotations

from typing import Any

import pytest

from app.graph.rules import progress
from app.texts import CS, EN, Texts

GOALS = [{"id": "g1", "title": "One"}, {"id": "g2", "title": "Two"}]
STEPS = [{"index": 0}, {"index": 1}]


def _at(goal: int = 0, step: int = 0, attempt: int = 1, steps: list[dict[str, Any]] | None = None,
        **more: Any) -> dict[str, Any]:
    """Goals before `goal` are done (summarised), as the run leaves them."""
    return {"goals": GOALS, "steps": STEPS if steps is None else steps, "current_goal_index": goal,
            "goal_summaries": [{"goal_id": g["id"]} for g in GOALS[:goal]], "current_step_index": step,
            "attempt": attempt, **more}


@pytest.mark.parametrize(
    ("node", "expected"),
    [("intake", 2.0), ("clarify", 3.0), ("evidence_pack", 5.0), ("plan", 8.0), ("plan_epic", 8.0),
     ("design", 8.0), ("approve_plan", 10.0), ("respond", 50.0)],
)
def test_percent_returns_the_fixed_mark_when_the_node_runs_before_the_work(node: str, expected: float) -> None:
    assert progress.percent({"goals": GOALS}, node) == expected


def test_percent_counts_plan_as_work_when_steps_already_exist() -> None:
    assert progress.percent(_at(), "plan") == progress.WORK_START


@pytest.mark.parametrize(
    ("state", "node", "expected"),
    [
        (_at(0, 0), "execute_step", 10.0),
        (_at(0, 1), "execute_step", 30.0),
        (_at(0, 1), "advance_goal", 50.0),
        (_at(1, 0), "execute_step", 50.0),
        (_at(1, 1), "execute_step", 70.0),
        (_at(1, 1), "advance_step", 90.0),
        (_at(2, 0), "select_goal", 90.0),
        (_at(0, 0, steps=[]), "select_goal", 10.0),
    ],
    ids=["first-step", "second-step", "goal-done", "second-goal", "last-step", "last-step-done", "all-goals-done",
         "no-steps-yet"],
)
def test_percent_splits_the_work_window_by_goals_and_steps_when_work_runs(
        state: dict[str, Any], node: str, expected: float) -> None:
    assert progress.percent(state, node) == expected


def test_percent_moves_a_step_forward_when_attempts_go_on_but_never_reaches_the_next_step() -> None:
    values = [progress.percent(_at(0, 0, attempt), node)
              for attempt in range(1, 21) for node in ("execute_step", "evaluate", "reflect")]
    assert values == sorted(values)
    assert values[1] > values[0]
    assert values[-1] < progress.percent(_at(0, 1), "execute_step")
    assert progress.work_fraction(_at(0, 0, 1000), "evaluate") < progress.work_fraction(_at(0, 1), "execute_step")


@pytest.mark.parametrize(
    ("state", "node", "expected"),
    [
        (_at(), "git_operations", 92.0),
        (_at(2), "finalize", 100.0),
        (_at(1, error="boom"), "finalize", 92.0),
        (_at(1, halt={"kind": "exhausted", "message": "x"}), "finalize", 92.0),
    ],
    ids=["git", "finalize-success", "finalize-error", "finalize-halt"],
)
def test_percent_reaches_100_only_when_the_run_finishes_without_error_or_halt(
        state: dict[str, Any], node: str, expected: float) -> None:
    assert progress.percent(state, node) == expected


@pytest.mark.parametrize("lingering", [True, False], ids=["steps-of-the-last-goal-linger", "steps-reset"])
def test_percent_counts_no_share_of_the_next_goal_when_select_goal_starts_after_advance_goal(lingering: bool) -> None:
    # advance_goal resets the steps; even if the finished goal's steps lingered they must not count.
    state = _at(1, 1) if lingering else _at(1, 0, steps=[])
    assert progress.percent(state, "select_goal") == 50.0


@pytest.mark.parametrize(
    ("previous", "state", "node", "expected"),
    [
        (30.0, _at(0, 0), "execute_step", 30.0),
        (5.0, _at(0, 1), "execute_step", 30.0),
        (0.0, _at(0, 0, progress_floor=42.0), "execute_step", 42.0),
        (0.0, _at(0, 1, progress_floor=None), "execute_step", 30.0),
        (92.0, _at(2), "finalize", 100.0),
    ],
    ids=["previous-higher", "percent-higher", "floor-higher", "floor-none", "done"],
)
def test_monotonic_never_returns_less_than_previous_or_the_floor(
        previous: float, state: dict[str, Any], node: str, expected: float) -> None:
    assert progress.monotonic(previous, state, node) == expected


def _simulated_run() -> tuple[list[tuple[dict[str, Any], str]], int]:
    """(state at node start, node) of a run of 2 goals × 2 steps: step 1.2 is retried once, step 2.1
    is replanned into twice as many remaining steps. Also returns where the replan happened."""
    state: dict[str, Any] = {"goals": GOALS, "steps": [], "current_goal_index": 0, "current_step_index": 0,
                             "attempt": 1}
    seen: list[tuple[dict[str, Any], str]] = []

    def run(node: str, **update: Any) -> None:
        seen.append((dict(state), node))
        state.update(update)

    for node in ("intake", "evidence_pack", "plan", "approve_plan", "select_goal"):
        run(node)
    run("plan_steps", steps=STEPS, current_step_index=0, attempt=1)
    run("execute_step"), run("evaluate"), run("advance_step", current_step_index=1, attempt=1)
    run("execute_step"), run("evaluate"), run("reflect", attempt=2)
    run("execute_step"), run("evaluate"), run("advance_goal", attempt=1, steps=[], current_step_index=0,
                                              goal_summaries=[{"goal_id": GOALS[0]["id"]}])
    run("select_goal", current_goal_index=1)
    run("plan_steps", steps=STEPS, current_step_index=0, attempt=1)
    run("execute_step"), run("evaluate"), run("reflect")
    replan_at = len(seen)
    floor = progress.monotonic(0.0, state, "replan")  # what the replan node stores
    run("replan", steps=[{"index": i} for i in range(4)], current_step_index=0, attempt=1, progress_floor=floor)
    for index in range(4):
        run("execute_step"), run("evaluate")
        run("advance_step", current_step_index=index + 1) if index < 3 else None
    run("git_operations"), run("finalize")
    return seen, replan_at


@pytest.mark.parametrize("restart_after_replan", [
    pytest.param(False, id="one-segment"),
    pytest.param(True, id="restart-after-replan"),
])
def test_monotonic_yields_a_non_decreasing_sequence_ending_at_100_when_a_run_retries_and_replans(
        restart_after_replan: bool) -> None:
    seen, replan_at = _simulated_run()
    raw = [progress.percent(state, node) for state, node in seen]
    assert min(raw[replan_at + 1:]) < raw[replan_at]  # the replan shrinks the raw fraction: the floor matters
    reported, previous = [], 0.0
    for position, (state, node) in enumerate(seen):
        if restart_after_replan and position == replan_at + 1:
            previous = 0.0  # a new process: only the checkpointed floor survives
        previous = progress.monotonic(previous, state, node)
        reported.append(previous)
    assert reported == sorted(reported)
    assert reported[-1] == progress.DONE


@pytest.mark.parametrize(
    ("t", "expected"),
    [(CS, "Opakuji krok 2/2 cíle 1/2 (pokus 3)…"), (EN, "Retrying step 2/2 of goal 1/2 (attempt 3)…")],
    ids=["cs", "en"],
)
def test_message_names_the_attempt_when_a_step_is_retried(t: Texts, expected: str) -> None:
    assert progress.message(_at(0, 1, 3), "execute_step", t) == expected


@pytest.mark.parametrize(
    ("t", "expected"),
    [(CS, "Opakuji krok 1/2 cíle 1/2 (pokus 2): chybí numpy"),
     (EN, "Retrying step 1/2 of goal 1/2 (attempt 2): chybí numpy")],
    ids=["cs", "en"],
)
def test_message_adds_the_root_cause_when_a_retry_follows_a_reflection(t: Texts, expected: str) -> None:
    state = _at(0, 0, 2, recovery={"root_cause": "chybí\nnumpy", "hint": "h", "failure": "f"})
    assert progress.message(state, "execute_step", t) == expected


@pytest.mark.parametrize(
    ("t", "node", "expected"),
    [(CS, "execute_step", "Provádím krok 1/2 cíle 2/2…"), (EN, "execute_step", "Running step 1/2 of goal 2/2…"),
     (EN, "git_operations", "Git operations…"), (EN, "unknown_node", "unknown_node")],
    ids=["cs-first-attempt", "en-first-attempt", "plain-node", "unknown-node"],
)
def test_message_uses_the_nodes_text_when_it_is_not_a_retry(t: Texts, node: str, expected: str) -> None:
    assert progress.message(_at(1, 0), node, t) == expected
