"""KotlinClient (app/clients/kotlin.py) against the fake Kotlin server over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.clients.kotlin import PROGRESS_PATH, STATUS_PATH, KotlinClient, TrackerError
from app.schemas.kotlin import (
    ProgressPush,
    StatusPush,
    TrackerCreateIssue,
    TrackerUpdateIssue,
)
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.support import free_port


@pytest.fixture
async def client(http: httpx.AsyncClient, kotlin: FakeKotlinServer) -> AsyncIterator[KotlinClient]:
    client = KotlinClient(http, kotlin.url + "/", push_timeout=2, push_attempts=3, retry_base_delay=0.02)
    await client.start()
    yield client
    await client.stop(drain_timeout=5)


def progress(node: str, step: int = 0) -> ProgressPush:
    return ProgressPush(task_id="t1", client_id="c1", node=node, message=f"{node}…", goal_index=0, total_goals=1,
                        step_index=step, total_steps=2)


def status(state: str = "done", **fields: object) -> StatusPush:
    return StatusPush(task_id="t1", client_id="c1", thread_id="thread-t1-abcd", status=state, **fields)  # type: ignore[arg-type]


async def test_pushes_arrive_in_order_and_pass_kotlin_validation(client: KotlinClient,
                                                                 kotlin: FakeKotlinServer) -> None:
    client.push_progress(progress("intake"))
    client.push_progress(progress("execute_step", step=1))
    client.push_status(status("done", summary="Hotovo", branch="task/t1", artifacts=["app/a.py"]))
    await client.flush(5)

    assert [e.route for e in kotlin.events] == [PROGRESS_PATH, PROGRESS_PATH, STATUS_PATH]
    assert [p["node"] for p in kotlin.progress] == ["intake", "execute_step"]
    assert kotlin.progress[1] == {"taskId": "t1", "clientId": "c1", "node": "execute_step",
                                  "message": "execute_step…", "percent": 0.0, "goalIndex": 0, "totalGoals": 1,
                                  "stepIndex": 1, "totalSteps": 2}
    assert kotlin.statuses == [{"taskId": "t1", "clientId": "c1", "threadId": "thread-t1-abcd", "status": "done",
                                "summary": "Hotovo", "error": None, "interruptAction": None,
                                "interruptDescription": None, "branch": "task/t1", "artifacts": ["app/a.py"]}]
    assert kotlin.violations == [] and kotlin.semantic_violations == []
    assert client.failed_pushes == 0


async def test_status_push_is_retried_until_it_arrives_when_kotlin_fails_twice(
    client: KotlinClient, kotlin: FakeKotlinServer
) -> None:
    kotlin.fail_next(2)
    client.push_status(status("error", error="LLM timeout"))
    await client.flush(5)
    assert [e.outcome for e in kotlin.events] == ["injected", "injected", "accepted"]
    assert kotlin.statuses[0]["error"] == "LLM timeout"
    assert client.failed_pushes == 0


async def test_progress_push_is_tried_once_when_kotlin_fails(client: KotlinClient, kotlin: FakeKotlinServer) -> None:
    kotlin.fail_next(1)
    client.push_progress(progress("plan"))
    client.push_status(status())
    await client.flush(5)
    assert [(e.route, e.outcome) for e in kotlin.events] == [(PROGRESS_PATH, "injected"), (STATUS_PATH, "accepted")]
    assert kotlin.progress == []
    assert client.failed_pushes == 1


async def test_push_is_not_retried_when_kotlin_rejects_it_with_4xx(client: KotlinClient,
                                                                   kotlin: FakeKotlinServer) -> None:
    kotlin.fail_next(1, status=400)
    client.push_status(status())
    await client.flush(5)
    assert [e.outcome for e in kotlin.events] == ["injected"]
    assert client.failed_pushes == 0


async def test_stop_drains_queued_pushes_before_stopping(http: httpx.AsyncClient, kotlin: FakeKotlinServer) -> None:
    client = KotlinClient(http, kotlin.url)
    await client.start()
    for index in range(5):
        client.push_progress(progress(f"node{index}"))
    client.push_status(status())
    await client.stop(drain_timeout=5)
    assert [p["node"] for p in kotlin.progress] == [f"node{i}" for i in range(5)]
    assert len(kotlin.statuses) == 1


async def test_failed_pushes_counts_a_status_push_that_fails_every_attempt(http: httpx.AsyncClient) -> None:
    client = KotlinClient(http, f"http://127.0.0.1:{free_port()}", push_timeout=1, push_attempts=3,
                          retry_base_delay=0.01)
    await client.start()
    client.push_status(status())
    client.push_progress(progress("plan"))
    await client.stop(drain_timeout=5)
    assert client.failed_pushes == 2


async def test_create_and_update_issue_return_kotlins_reply(client: KotlinClient, kotlin: FakeKotlinServer) -> None:
    kotlin.implemented_tracker()
    created = await client.create_issue(TrackerCreateIssue(client_id="c1", project_id=None, title="Bug"),
                                        idempotency_key="tracker:t1:g0:s0:r0:o0:abc")
    updated = await client.update_issue(TrackerUpdateIssue(client_id="c1", issue_key="FAKE-1", status="done"))
    assert created == {"ok": True, "key": "FAKE-1"}
    assert updated["ok"] is True
    assert [e.idempotency_key for e in kotlin.events] == ["tracker:t1:g0:s0:r0:o0:abc", None]
    assert [call[0] for call in kotlin.tracker_calls] == ["create-issue", "update-issue"]
    assert kotlin.tracker_calls[0][1] == {"clientId": "c1", "projectId": None, "title": "Bug", "description": "",
                                          "type": "task", "parentKey": None}
    assert kotlin.violations == []


async def test_tracker_call_raises_tracker_error_when_kotlin_fails(client: KotlinClient,
                                                                   kotlin: FakeKotlinServer) -> None:
    kotlin.fail_next(1)
    with pytest.raises(TrackerError, match="create-issue"):
        await client.create_issue(TrackerCreateIssue(client_id="c1", title="Bug"))
