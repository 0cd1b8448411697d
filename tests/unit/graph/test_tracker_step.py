"""Tracker steps (app/graph/nodes/execute_step.py, app/graph/rules/tracker_ops.py) in-process, against
the fake Kotlin server and the context store on nx-27017: nothing claimed that Kotlin did not do,
and an issue created at most once per run and step, whatever is run again."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.runnables.config import set_config_context
from langgraph.runtime import Runtime

from app.graph.context import RunContext
from app.graph.nodes.execute_step import execute_step
from app.graph.rules.tracker_ops import SCOPE, TrackerCall, idempotency_key
from app.schemas.domain import TrackerOperation
from app.schemas.kotlin import TrackerCreateIssue
from tests.fixtures.kotlin_server import FakeKotlinServer

TASK = "67ad0f1e2b3c4d5e6f708192"
CREATE = {"op": "create", "title": "Health endpoint", "description": "Add /health"}


def tracker_state(*operations: dict[str, Any], attempt: int = 1, revision: int = 0) -> dict[str, Any]:
    step = {"index": 1, "instructions": "File the issues", "step_type": "tracker", "revision": revision,
            "tracker_operations": list(operations)}
    return {"thread_id": f"thread-{TASK}-0000abcd", "language": "cs", "attempt": attempt,
            "task": {"id": TASK, "client_id": "c1", "project_id": "p1", "query": "Založ issue"},
            "jervis_project_id": "jp1", "current_goal_index": 0, "current_step_index": 0, "steps": [step]}


async def run_step(ctx: RunContext, state: dict[str, Any], *,
                   thread_id: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """The node called directly (outside a graph its run is the task), or as one run's thread."""
    if thread_id is None:
        update = await execute_step(state, Runtime(context=ctx))  # type: ignore[arg-type]
    else:
        with set_config_context({"configurable": {"thread_id": thread_id}}) as context:
            update = await asyncio.create_task(execute_step(state, Runtime(context=ctx)),  # type: ignore[arg-type]
                                               context=context)
    [result] = update["step_results"]
    return result, update.get("warnings", [])


async def test_a_placeholder_reply_is_reported_as_not_done_without_failing_the_step(
        ctx: RunContext, kotlin: FakeKotlinServer) -> None:
    result, warnings = await run_step(ctx, tracker_state(
        CREATE, {"op": "update", "issue_key": "JER-7", "status": "done"}))

    assert result["success"] is True and result["completed_operations"] == [0, 1]
    assert warnings == [
        "Issue „Health endpoint“ nebylo založeno: tracker odpověděl bez klíče issue (create-issue placeholder)",
        "Issue JER-7 nebylo změněno: tracker změnu neprovedl (update-issue placeholder)"]
    assert result["summary"] == "; ".join(warnings) and "created" not in result["summary"]
    assert [name for name, _ in kotlin.tracker_calls] == ["create-issue", "update-issue"]
    assert kotlin.created_issues == [] and kotlin.violations == []


async def test_an_issue_is_created_once_when_the_node_runs_again(ctx: RunContext, kotlin: FakeKotlinServer) -> None:
    kotlin.implemented_tracker()
    state = tracker_state(CREATE)

    first, _ = await run_step(ctx, state)
    replayed, _ = await run_step(ctx, state)  # a resume or replay from the checkpoint before the node
    retried, _ = await run_step(ctx, tracker_state(CREATE, attempt=2))  # another attempt of the same step

    assert first["summary"] == replayed["summary"] == retried["summary"] == "created FAKE-1"
    assert kotlin.created_issues == ["FAKE-1"] and len(kotlin.tracker_calls) == 1
    [call] = [e for e in kotlin.events if e.route.endswith("create-issue")]
    assert call.idempotency_key == f"tracker:{TASK}:g0:s1:r0:o0:" + call.idempotency_key.rsplit(":", 1)[1]
    assert call.body == {"clientId": "c1", "projectId": "jp1", "title": "Health endpoint", "description": "Add /health",
                         "type": "task", "parentKey": None}


async def test_the_next_request_in_the_same_chat_carries_out_its_own_operation(
        ctx: RunContext, kotlin: FakeKotlinServer) -> None:
    # Kotlin reuses the task id for every request of a chat: the record belongs to the run (thread).
    kotlin.implemented_tracker()
    first, _ = await run_step(ctx, tracker_state(CREATE), thread_id=f"thread-{TASK}-00000001")
    again, _ = await run_step(ctx, tracker_state(CREATE), thread_id=f"thread-{TASK}-00000001")
    second, _ = await run_step(ctx, tracker_state(CREATE), thread_id=f"thread-{TASK}-00000002")

    assert (first["summary"], again["summary"], second["summary"]) == (
        "created FAKE-1", "created FAKE-1", "created FAKE-2")
    assert kotlin.created_issues == ["FAKE-1", "FAKE-2"]


async def test_a_call_lost_in_a_crash_is_repeated_with_the_same_idempotency_key(
        ctx: RunContext, kotlin: FakeKotlinServer) -> None:
    kotlin.implemented_tracker()
    call = TrackerCall(run_id=TASK, client_id="c1", project_id="jp1", goal_index=0, step_index=1, revision=0, index=0)
    key = idempotency_key(call, TrackerOperation.model_validate(CREATE))
    # The earlier process recorded the key, made the call, and died before recording the answer.
    await ctx.context_store.save(TASK, SCOPE, key, "pending", {"state": "pending", "op": "create"})
    await ctx.kotlin.create_issue(TrackerCreateIssue(client_id="c1", project_id="jp1", title="Health endpoint"),
                                  idempotency_key=key)

    result, _ = await run_step(ctx, tracker_state(CREATE))

    assert result["summary"] == "created FAKE-1" and kotlin.created_issues == ["FAKE-1"]
    assert [e.idempotency_key for e in kotlin.events] == [key, key]


async def test_a_replanned_step_is_another_operation(ctx: RunContext, kotlin: FakeKotlinServer) -> None:
    kotlin.implemented_tracker()
    await run_step(ctx, tracker_state(CREATE))
    other, _ = await run_step(ctx, tracker_state(CREATE, revision=1))
    assert other["summary"] == "created FAKE-2" and kotlin.created_issues == ["FAKE-1", "FAKE-2"]


async def test_an_operation_kotlin_failed_fails_the_step_and_is_not_recorded_as_done(
        ctx: RunContext, kotlin: FakeKotlinServer) -> None:
    kotlin.implemented_tracker()
    kotlin.fail_next(1)

    failed, _ = await run_step(ctx, tracker_state(CREATE))
    retried, _ = await run_step(ctx, tracker_state(CREATE, attempt=2))

    assert failed["success"] is False and failed["summary"].startswith("FAILED /internal/tracker/create-issue failed")
    assert retried["success"] is True and retried["summary"] == "created FAKE-1" and kotlin.created_issues == ["FAKE-1"]
