"""Each goal's state while goals of a wave run side by side (app/runs/goal_progress.py)."""

from __future__ import annotations

from typing import Any

from app.runs.goal_progress import activity_of, goal_states
from app.texts import CS, EN

GOALS = [{"id": "a", "title": "Add alpha"}, {"id": "c", "title": "Add gamma"}, {"id": "b", "title": "Add beta"}]


def run(**more: Any) -> dict[str, Any]:
    return {"goals": GOALS, "goal_summaries": [], "current_goal_index": 0, **more}


def test_a_wave_shows_what_each_running_goal_does_and_what_waits() -> None:
    state = run(wave={"goals": ["a", "c"]}, current_goal_index=0)
    alpha = activity_of("execute_step", {"goals": GOALS, "current_goal_index": 0, "steps": [{}, {}],
                                         "current_step_index": 1})
    assert alpha is not None and (alpha.goal_id, alpha.step, alpha.steps) == ("a", 2, 2)
    assert goal_states(state, {"a": alpha}, EN, "run_goal") == (
        "1. Add alpha: running (execute_step, step 2/2); 2. Add gamma: running (run_goal); 3. Add beta: waiting")


def test_a_goal_alone_runs_in_the_runs_own_loop_and_done_goals_say_so_in_czech() -> None:
    state = run(goal_summaries=[{"goal_id": "a"}, {"goal_id": "c"}], current_goal_index=2, steps=[{}],
                current_step_index=0)
    assert goal_states(state, {}, CS, "evaluate") == (
        "1. Add alpha: hotovo; 2. Add gamma: hotovo; 3. Add beta: běží (evaluate, krok 1/1)")
    assert goal_states(state, {}, EN, "git_operations").endswith("3. Add beta: waiting")  # not the goal loop


def test_a_plan_of_one_goal_has_no_goal_states() -> None:
    assert goal_states({"goals": GOALS[:1]}, {}, EN, "execute_step") == ""
    assert activity_of("execute_step", {"goals": GOALS, "current_goal_index": 7}) is None
