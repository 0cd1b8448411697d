"""The /status projection: every status a run can show, from its record or its live progress."""

from __future__ import annotations

from typing import Any

import pytest

from app.llm.budget import BudgetLimits, BudgetTracker, Usage
from app.persistence.runs import RunRecord
from app.runs.lifecycle import RunIdentity, RunOutcome
from app.runs.status import EndedStatuses, record_of, run_summary, status_map

USAGE = {"tokens": 1234, "cost_usd": 0.5, "seconds": 12}


def record(status: Any, **fields: Any) -> RunRecord:
    return RunRecord(thread_id="thread-t1-abc", task_id="t1", client_id="c1", status=status,
                     created_at=0.0, updated_at=86400.0, **fields)


def test_a_run_executing_here_shows_its_live_percent_whatever_is_stored() -> None:
    stale = record("interrupted", percent=10.0)
    assert status_map("thread-t1-abc", stale, live_percent=42.5) == {
        "status": "running", "thread_id": "thread-t1-abc", "percent": "42.5"}


def test_a_running_step_says_which_program_runs_it() -> None:
    assert status_map("thread-t1-abc", None, live_percent=50.0, agent="openhands → aider")["agent"] == \
        "openhands → aider"
    assert "agent" not in status_map("thread-t1-abc", None, live_percent=50.0)


def test_no_record_is_unknown() -> None:
    assert status_map("thread-x", None) == {"status": "unknown", "thread_id": "thread-x"}


def test_a_running_record_shows_its_percent_and_no_usage() -> None:
    assert status_map("thread-t1-abc", record("running", percent=30.0, usage=USAGE)) == {
        "status": "running", "thread_id": "thread-t1-abc", "percent": "30"}


def test_an_interrupted_record_names_what_it_asks() -> None:
    body = status_map("thread-t1-abc", record("interrupted", interrupt_action="commit",
                                              interrupt_description="Commit?", percent=80.0, usage=USAGE))
    assert body == {"status": "interrupted", "thread_id": "thread-t1-abc", "interrupt_action": "commit",
                    "interrupt_description": "Commit?", "percent": "80", "llm_tokens": "1234",
                    "llm_cost_usd": "0.500000", "llm_seconds": "12"}


def test_an_interrupted_record_without_an_action_says_unknown() -> None:
    body = status_map("thread-t1-abc", record("interrupted"))
    assert (body["interrupt_action"], body["interrupt_description"]) == ("unknown", "")


def test_a_done_record_is_100_percent_with_its_branch_and_artifacts_joined() -> None:
    body = status_map("thread-t1-abc", record("done", summary="Hotovo", branch="task/t1",
                                              artifacts=["a.py", "b.py"], percent=95.0))
    assert body == {"status": "done", "thread_id": "thread-t1-abc", "summary": "Hotovo", "branch": "task/t1",
                    "artifacts": "a.py,b.py", "percent": "100"}


def test_an_error_record_carries_its_report_and_omits_what_it_lacks() -> None:
    body = status_map("thread-t1-abc", record("error", error="boom", report="full report", percent=55.0))
    assert body == {"status": "error", "thread_id": "thread-t1-abc", "error": "boom", "report": "full report",
                    "percent": "55"}
    assert status_map("thread-t1-abc", record("error"))["error"] == "unknown error"


@pytest.mark.parametrize("status", ["done", "error", "interrupted"])
def test_every_value_is_a_string(status: str) -> None:
    body = status_map("thread-t1-abc", record(status, usage=USAGE, artifacts=["x"], branch="b", percent=1.0))
    assert all(isinstance(value, str) for value in body.values())


def test_a_just_ended_run_projects_like_its_stored_record_will() -> None:
    outcome = RunOutcome(status="done", summary="Hotovo", branch="task/t1", artifacts=["a.py"], usage=USAGE,
                         percent=100.0)
    ended = record_of(RunIdentity("thread-t1-abc", "t1", "c1"), outcome)
    stored = record("done", summary="Hotovo", branch="task/t1", artifacts=["a.py"], usage=USAGE, percent=100.0)
    assert status_map("thread-t1-abc", ended) == status_map("thread-t1-abc", stored)


def test_run_summary_has_typed_values_iso_times_and_null_for_no_text() -> None:
    summary = run_summary(record("error", error="", percent=55.0))
    assert (summary.status, summary.percent, summary.error, summary.branch) == ("error", 55.0, None, None)
    assert (summary.created_at, summary.updated_at) == ("1970-01-01T00:00:00+00:00", "1970-01-02T00:00:00+00:00")


def tracked_usage() -> dict[str, Any]:
    """A run's usage as the budget tracker stores it: two nodes timed, one of them with a model call."""
    tracker = BudgetTracker(BudgetLimits())
    tracker.record_node("intake", 0.05)
    tracker.record("plan_steps", "local_fast", Usage(prompt_tokens=700, completion_tokens=112, seconds=30.9, calls=1))
    tracker.record_node("plan_steps", 31.2)
    tracker.record_node("execute_step", 25.3)
    tracker.record_node("execute_step", 20.0)
    return tracker.snapshot()


def test_status_says_where_a_runs_time_went_per_node() -> None:
    body = status_map("thread-t1-abc", record("done", usage=tracked_usage()))
    assert body["time_by_node"] == ("intake 0.1 s; plan_steps 31.2 s (1 call, 812 tokens, 30.9 s); "
                                    "execute_step 45.3 s")
    assert body["llm_calls"] == "1" and body["llm_tokens"] == "812"
    assert all(isinstance(value, str) for value in body.values())  # Kotlin decodes Map<String, String>


def test_runs_list_carries_the_time_per_node_typed() -> None:
    usage = run_summary(record("done", usage=tracked_usage())).usage
    assert usage is not None and (usage.llm_calls, usage.llm_tokens) == (1, 812)
    assert [(n.node, n.seconds, n.llm_calls) for n in usage.nodes] == [
        ("intake", 0.05, 0), ("plan_steps", 31.2, 1), ("execute_step", 45.3, 0)]
    assert run_summary(record("running")).usage is None


def test_ended_statuses_keep_only_ended_runs_and_the_most_recently_read() -> None:
    ended = EndedStatuses(capacity=2)
    done, failed, other = ({"thread_id": name, "status": status}
                           for name, status in (("a", "done"), ("b", "error"), ("c", "done")))
    assert ended.keep("w", {"thread_id": "w", "status": "interrupted"})["status"] == "interrupted"
    ended.keep("r", {"thread_id": "r", "status": "running"})
    ended.keep("u", {"thread_id": "u", "status": "unknown"})  # may be created by another pod later
    assert len(ended) == 0 and ended.get("w") is None

    ended.keep("a", done)
    ended.keep("b", failed)
    assert ended.get("a") == done  # read: now the most recent
    ended.keep("c", other)  # over capacity: the least recently read goes
    assert ended.get("b") is None and ended.get("a") == done and ended.get("c") == other and len(ended) == 2
