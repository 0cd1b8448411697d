"""The run page's projection of a record and a checkpoint (`app/runs/detail.py`) and the first line
a list of runs shows (`status.first_line`): pure functions, every case a dict away."""

from __future__ import annotations

from typing import Any

from app.persistence.runs import RunRecord
from app.runs.detail import budget_use, plan_view, run_detail
from app.runs.diffs import spans
from app.runs.status import first_line, run_summary

TREE = {name: name * 40 for name in "abcdef"}


def record(**fields: Any) -> RunRecord:
    return RunRecord(**{"thread_id": "thread-t1-00000001", "task_id": "t1", "client_id": "c1", "status": "running",
                        "created_at": 0.0, "updated_at": 1.0, **fields})


def result(goal: int, step: int, attempt: int, success: bool, base: str | None = None, **more: Any) -> dict[str, Any]:
    return {"goal_index": goal, "step_index": step, "attempt": attempt, "success": success,
            "summary": f"s{step}a{attempt}", "changed_files": more.pop("files", []), "agent_type": "aider",
            "step_type": "code", "title": more.pop("title", ""), "base_tree": base, **more}


EPIC = {
    "task": {"query": "Build it\nin three parts", "budget_limits": {"max_tokens": 1000, "max_cost_usd": None,
                                                                    "max_seconds": 60.0}},
    "goals": [{"id": "g1", "title": "Alpha", "dependencies": []}, {"id": "g2", "title": "Beta", "dependencies": ["g1"]},
              {"id": "g3", "title": "Gamma", "dependencies": []}],
    "goal_summaries": [{"goal_id": "g1", "title": "Alpha", "summary": "alpha done", "tree": TREE["b"]}],
    "current_goal_index": 1,
    "steps": [{"index": 0, "instructions": "Write beta.py\nwith details", "step_type": "code"},
              {"index": 1, "instructions": "Test beta", "step_type": "test"}],
    "current_step_index": 0,
    "step_results": [result(0, 0, 1, False, TREE["a"], title="Write alpha"),
                     result(0, 0, 2, True, TREE["a"], title="Write alpha", files=["alpha.py"]),
                     result(1, 0, 1, False, TREE["b"], title="Write beta.py")],
    "skipped": [],
}


def test_an_epic_shows_waves_done_goals_the_running_step_and_every_attempt() -> None:
    goals = plan_view(EPIC, running=True)
    assert [(g.id, g.status, g.wave) for g in goals] == [("g1", "done", 1), ("g2", "running", 2), ("g3", "waiting", 1)]
    assert goals[0].summary == "alpha done" and goals[1].dependencies == ["g1"]
    [alpha] = goals[0].steps
    assert alpha.title == "Write alpha" and alpha.status == "done"
    assert [(a.attempt, a.success) for a in alpha.attempts] == [(1, False), (2, True)]
    assert alpha.attempts[1].changed_files == ["alpha.py"]
    beta = goals[1].steps
    assert [(s.title, s.status, s.step_type) for s in beta] == [("Write beta.py", "running", "code"),
                                                              ("Test beta", "waiting", "test")]
    assert goals[2].steps == []


def test_a_run_that_is_not_executing_shows_its_current_work_as_waiting_and_a_skipped_step_as_skipped() -> None:
    values = {**EPIC, "skipped": [{"goal_index": 1, "step_index": 1, "title": "Test beta", "reason": "user"}]}
    goals = plan_view(values, running=False)
    assert goals[1].status == "waiting"
    assert [s.status for s in goals[1].steps] == ["failed", "skipped"]


def test_a_goal_whose_planned_steps_all_finished_is_done_before_its_summary_is_written() -> None:
    values = {"goals": [{"id": "g1", "title": "Only"}], "current_goal_index": 0,
              "steps": [{"index": 0, "instructions": "Do it"}], "current_step_index": 0,
              "step_results": [result(0, 0, 1, True, TREE["a"])]}
    [goal] = plan_view(values, running=False)
    assert goal.status == "done" and goal.steps[0].status == "done"


def test_a_waiting_run_shows_its_question_answer_budget_and_request() -> None:
    detail = run_detail(record(status="interrupted", interrupt_action="clarify", interrupt_description="Which file?",
                               request="Build it", usage={"tokens": 250, "cost_usd": 0.0, "seconds": 12.5},
                               answer={"approved": True, "pod_id": "p1"}), EPIC)
    assert detail.question is not None and detail.question.clarification
    assert detail.question.description == "Which file?"
    assert detail.waiting == "clarify" and detail.request == "Build it" and detail.query == "Build it\nin three parts"
    assert detail.answer == {"approved": True, "pod_id": "p1"}
    assert detail.budget is not None and (detail.budget.tokens, detail.budget.max_tokens) == (250, 1000)
    assert detail.budget.max_cost_usd is None and detail.budget.max_seconds == 60.0
    approval = run_detail(record(status="interrupted", interrupt_action="commit"), {})
    assert approval.question is not None and not approval.question.clarification and approval.goals == []


def test_the_report_is_the_summary_of_a_done_run_and_the_report_of_a_failed_one() -> None:
    assert run_detail(record(status="done", summary="All done."), {}).report == "All done."
    assert run_detail(record(status="error", error="cut", report="Finished 1 of 2."), {}).report == "Finished 1 of 2."
    assert run_detail(record(), {}).report is None and run_detail(record(), {}).question is None


def test_budget_use_without_limits_has_none() -> None:
    use = budget_use({}, None)
    assert (use.tokens, use.cost_usd, use.seconds, use.max_tokens) == (0, 0.0, 0.0, None)


def test_the_list_shows_a_requests_first_line_and_what_a_waiting_run_waits_for() -> None:
    assert first_line("\n\n  Add a health endpoint  \nmore") == "Add a health endpoint"
    assert first_line("x" * 300) == "x" * 199 + "…" and first_line("") == ""
    assert run_summary(record(status="interrupted", interrupt_action="push")).waiting == "push"
    assert run_summary(record(status="interrupted")).waiting == "unknown"
    assert run_summary(record(status="done", interrupt_action="push")).waiting is None


def test_diff_spans_run_from_goal_to_goal_and_step_to_step() -> None:
    values = {**EPIC, "step_results": [*EPIC["step_results"], result(1, 1, 1, True, TREE["c"], title="Test beta")]}
    found = spans(values, TREE["a"])
    assert found == [
        ("Goal 1: Alpha", "goal", TREE["a"], TREE["b"]),
        ("Goal 1, step 1: Write alpha", "step", TREE["a"], TREE["b"]),  # the goal's last step ends at the goal's tree
        ("Goal 2, step 1: Write beta.py", "step", TREE["b"], TREE["c"]),  # … or where the next step began
        ("Goal 2, step 2: Test beta", "step", TREE["c"], None),  # the step in progress: to the working tree now
    ]


def test_goals_of_a_running_wave_show_the_steps_of_their_own_state() -> None:
    """A wave goal's steps and attempts live in its subgraph until the merge: the view reads them
    from there, and a goal whose steps all finished in its worktree is done."""
    values = {"goals": EPIC["goals"], "wave": {"number": 1, "goals": ["g1", "g3"]}, "current_goal_index": 0,
              "steps": [], "step_results": []}
    alpha = {"goals": EPIC["goals"], "current_goal_index": 0, "current_step_index": 0,
             "steps": [{"index": 0, "instructions": "Write alpha.py"}],
             "step_results": [result(0, 0, 1, True, TREE["a"], title="Write alpha.py")]}
    gamma = {"goals": EPIC["goals"], "current_goal_index": 2, "current_step_index": 1,
             "steps": [{"index": 0, "instructions": "Write gamma.py"}, {"index": 1, "instructions": "Test gamma"}],
             "step_results": [result(2, 0, 1, True, TREE["b"], title="Write gamma.py")]}
    goals = plan_view(values, running=True, goals_in_wave={"g1": alpha, "g3": gamma})
    assert [(g.id, g.status) for g in goals] == [("g1", "done"), ("g2", "waiting"), ("g3", "running")]
    assert [(s.title, s.status) for s in goals[2].steps] == [("Write gamma.py", "done"), ("Test gamma", "running")]
    assert goals[1].steps == []
    assert [g.status for g in plan_view(values, running=True)] == ["running", "waiting", "running"]
