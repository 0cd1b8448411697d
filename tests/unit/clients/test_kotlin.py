"""KotlinClient (app/clients/kotlin.py) with its outbox, against the fake Kotlin server over real
HTTP and a real MongoDB: what a push is (body, redaction, identity) and that it arrives."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.clients.kotlin import PROGRESS_PATH, STATUS_PATH, KotlinClient, TrackerError
from app.observability.logs import Redactor
from app.schemas.kotlin import ProgressPush, StatusPush, TrackerCreateIssue, TrackerUpdateIssue
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.outbox import PushRig, push_rig


@pytest.fixture
async def rig(http: httpx.AsyncClient, kotlin: FakeKotlinServer, mongo_db: Any) -> AsyncIterator[PushRig]:
    async with push_rig(http, kotlin.url + "/", mongo_db, retry_base_seconds=0.02, retry_max_seconds=0.05) as rig:
        yield rig


@pytest.fixture
def client(rig: PushRig) -> KotlinClient:
    return rig.client


def progress(node: str, step: int = 0, task_id: str = "t1") -> ProgressPush:
    return ProgressPush(task_id=task_id, client_id="c1", node=node, message=f"{node}…", goal_index=0, total_goals=1,
                        step_index=step, total_steps=2)


def status(state: str = "done", **fields: object) -> StatusPush:
    return StatusPush(task_id="t1", client_id="c1", thread_id="thread-t1-abcd", status=state, **fields)  # type: ignore[arg-type]


async def test_pushes_arrive_in_order_and_pass_kotlin_validation(rig: PushRig, kotlin: FakeKotlinServer) -> None:
    await rig.client.push_progress(progress("intake"))
    await rig.client.push_progress(progress("execute_step", step=1))
    await rig.client.push_status(status("done", summary="Hotovo", branch="task/t1", artifacts=["app/a.py"]))
    await rig.flush()

    assert [e.route for e in kotlin.events] == [PROGRESS_PATH, PROGRESS_PATH, STATUS_PATH]
    assert [p["node"] for p in kotlin.progress] == ["intake", "execute_step"]
    assert kotlin.progress[1] == {"taskId": "t1", "clientId": "c1", "node": "execute_step",
                                  "message": "execute_step…", "percent": 0.0, "goalIndex": 0, "totalGoals": 1,
                                  "stepIndex": 1, "totalSteps": 2}
    assert kotlin.statuses == [{"taskId": "t1", "clientId": "c1", "threadId": "thread-t1-abcd", "status": "done",
                                "summary": "Hotovo", "error": None, "interruptAction": None,
                                "interruptDescription": None, "branch": "task/t1", "artifacts": ["app/a.py"]}]
    assert kotlin.violations == [] and kotlin.semantic_violations == []
    progress_keys = kotlin.accepted_keys(PROGRESS_PATH)
    assert all(key and key.startswith("progress:t1:") for key in progress_keys) and len(set(progress_keys)) == 2
    assert kotlin.accepted_keys(STATUS_PATH) == ["status:thread-t1-abcd:done"]
    assert (await rig.store.stats()).depth == 0


async def test_status_push_is_retried_until_kotlin_takes_it(rig: PushRig, kotlin: FakeKotlinServer) -> None:
    kotlin.fail_next(2, status=503)
    await rig.client.push_status(status("error", error="LLM timeout"))
    await rig.flush()
    assert [e.outcome for e in kotlin.events] == ["injected", "injected", "accepted"]
    assert {e.idempotency_key for e in kotlin.events} == {"status:thread-t1-abcd:error"}
    assert kotlin.statuses[0]["error"] == "LLM timeout"
    assert rig.metrics.push_attempt_failures.labels(STATUS_PATH)._value.get() == 2
    assert rig.metrics.push_deliveries.labels(STATUS_PATH)._value.get() == 1


async def test_failed_progress_is_dropped_for_the_status_behind_it(rig: PushRig, kotlin: FakeKotlinServer) -> None:
    kotlin.fail_next(1)
    await rig.client.push_progress(progress("plan"))
    await rig.client.push_status(status())
    await rig.flush()
    assert [(e.route, e.outcome) for e in kotlin.events] == [(PROGRESS_PATH, "injected"), (STATUS_PATH, "accepted")]
    assert kotlin.progress == []


async def test_push_is_not_retried_when_kotlin_rejects_it_with_4xx(rig: PushRig, kotlin: FakeKotlinServer) -> None:
    kotlin.fail_next(1, status=400)
    await rig.client.push_status(status())
    await rig.flush()
    assert [e.outcome for e in kotlin.events] == ["injected"]
    assert (await rig.store.get("status:thread-t1-abcd:done") or {})["state"] == "delivered"
    assert rig.metrics.push_attempt_failures.labels(STATUS_PATH)._value.get() == 0


async def test_a_status_is_stored_and_sent_once_per_identity(rig: PushRig, kotlin: FakeKotlinServer) -> None:
    await rig.client.push_status(status("interrupted", interrupt_action="clarify"), segment="int-1")
    await rig.flush()
    # A crash replay produces the same statuses again; a later interrupt of the thread is new.
    await rig.client.push_status(status("interrupted", interrupt_action="clarify"), segment="int-1")
    await rig.client.push_status(status("interrupted", interrupt_action="commit"), segment="int-2")
    await rig.client.push_status(status("done"))
    await rig.client.push_status(status("done"))
    await rig.flush()

    assert kotlin.accepted_keys(STATUS_PATH) == ["status:thread-t1-abcd:interrupted:int-1",
                                                 "status:thread-t1-abcd:interrupted:int-2",
                                                 "status:thread-t1-abcd:done"]
    assert [s["interruptAction"] for s in kotlin.statuses] == ["clarify", "commit", None]


async def test_progress_is_coalesced_to_the_latest_while_kotlin_is_down(rig: PushRig,
                                                                        kotlin: FakeKotlinServer) -> None:
    kotlin.fail_next(1_000, status=503)
    for node in ("intake", "evidence_pack", "respond"):
        await rig.client.push_progress(progress(node))
    await rig.writer.flush(5)
    await rig.delivery.deliver_due()
    docs = [doc async for doc in rig.store._collection.find({})]
    assert [(d["_id"], d["body"]["node"]) for d in docs] == [("progress:t1", "respond")]

    kotlin.fail_next(0)
    await rig.flush()
    assert [p["node"] for p in kotlin.progress] == ["respond"]


async def test_stop_drains_the_pushes_being_sent(http: httpx.AsyncClient, kotlin: FakeKotlinServer,
                                                 mongo_db: Any) -> None:
    async with push_rig(http, kotlin.url, mongo_db) as rig:
        for index in range(5):
            await rig.client.push_progress(progress(f"node{index}"))
        await rig.client.push_status(status())
    assert [p["node"] for p in kotlin.progress] == [f"node{i}" for i in range(5)]
    assert len(kotlin.statuses) == 1


async def test_every_string_of_a_push_is_redacted_before_it_is_stored(http: httpx.AsyncClient,
                                                                      kotlin: FakeKotlinServer, mongo_db: Any) -> None:
    secret = "sk-live-0123456789abcdef"
    async with push_rig(http, kotlin.url, mongo_db, redact=Redactor([secret]), retry_base_seconds=0.02) as rig:
        kotlin.fail_next(1_000, status=503)  # the push stays in the outbox, where it can be read
        await rig.client.push_status(status("error", error=f"provider said: key {secret} invalid",
                                            artifacts=[f"notes-{secret}.txt"]))
        await rig.client.push_progress(progress(f"plan {secret}"))
        await rig.writer.flush(5)
        stored = [doc async for doc in rig.store._collection.find({})]
        kotlin.fail_next(0)
        await rig.flush()
    assert stored and secret not in repr(stored) and "***" in repr(stored)
    assert kotlin.statuses[0]["error"] == "provider said: key *** invalid"
    assert kotlin.statuses[0]["artifacts"] == ["notes-***.txt"]
    assert secret not in repr(kotlin.progress) and kotlin.violations == []


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
