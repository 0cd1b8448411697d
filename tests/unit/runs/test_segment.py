"""What a run segment starts from (app/runs/segment.py): the graph input carries the request's
read-only facts in `task` (one checkpoint document, not one per fact), and every segment's budget
comes from there; a run checkpointed before the limits moved there gets the configured ones."""

from __future__ import annotations

from typing import Any

from app.config import Settings
from app.runs.events import EventLog
from app.runs.lifecycle import RunIdentity, RunProgress
from app.runs.segment import default_limits, initial_state, segment_scope
from app.schemas.kotlin import OrchestrateRequest
from tests.support import orchestrate_body

SETTINGS = Settings(budget_max_tokens=5000, budget_max_cost_usd=1.5, budget_max_seconds=600)


def request(**overrides: Any) -> OrchestrateRequest:
    return OrchestrateRequest.model_validate(orchestrate_body(query="Přidej funkci mul", **overrides))


def limits_of(values: dict[str, Any]) -> dict[str, Any]:
    scope = segment_scope(settings=SETTINGS, kotlin=None, identity=RunIdentity("thread-t-1", "t", "c"),  # type: ignore[arg-type]
                          values=values, previous=None, events=EventLog(capacity=10), progress=RunProgress())
    assert scope.budget is not None
    return scope.budget.limits.model_dump()


def test_the_input_is_task_and_rules_only_with_names_language_and_limits_in_the_task() -> None:
    body = request(client_name="Acme", project_name="Shop", budget={"max_tokens": 100})

    state = initial_state(body, response_language="auto", limits=default_limits(SETTINGS))

    assert sorted(state) == ["rules", "task"]  # no thread id (the config has it), no one-fact keys
    task = state["task"]
    assert (task.get("client_name"), task.get("project_name"), task.get("language")) == ("Acme", "Shop", "cs")
    assert task.get("budget_limits") == {"max_tokens": 100, "max_cost_usd": 1.5, "max_seconds": 600}


def test_a_configured_language_wins_and_without_one_the_language_is_left_to_the_run() -> None:
    assert initial_state(request(), response_language="en")["task"].get("language") == "en"
    assert initial_state(request())["task"].get("language") is None


def test_every_segment_runs_under_the_limits_the_task_carries() -> None:
    state = initial_state(request(budget={"max_cost_usd": 0.25}), limits=default_limits(SETTINGS))

    assert limits_of(dict(state)) == {"max_tokens": 5000, "max_cost_usd": 0.25, "max_seconds": 600}


def test_a_run_checkpointed_before_the_limits_moved_into_the_task_gets_the_configured_ones() -> None:
    old = {"task": {"id": "t", "client_id": "c", "query": "Přidej funkci mul"}, "budget_limits": {"max_tokens": 1}}

    assert limits_of(old) == {"max_tokens": 5000, "max_cost_usd": 1.5, "max_seconds": 600}
