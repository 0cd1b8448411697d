"""What a run says outside its graph is in the run's language: cancel (waiting and running), a
refused cloud model, suspension at shutdown, a restart before the first checkpoint and a spent
budget, for an English and a Czech request. In-process pods (`tests/fixtures/pods.py`) on the
real components; the expected texts are written out here, not read from the catalogues."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.persistence.runs import RunRecord
from app.schemas.kotlin import ApprovalResponse, OrchestrateRequest
from app.schemas.thread_ids import new_thread_id
from tests.fixtures.llm_server import Reply
from tests.fixtures.pods import Pod, start_pod
from tests.support import classification, new_task_id, node_marker, orchestrate_body, until

ENGLISH = "Explain what the billing module does"
CZECH = "Vysvětli, co dělá modul fakturace"

SAID = {
    "en": {"cancelled": "Orchestration cancelled by the user",
           "cloud_rejected": "The local model failed and using a cloud model was refused",
           "suspended": "Orchestration suspended (service restart); it will resume from its last checkpoint",
           "restarted": "The orchestration was interrupted by a service restart — start the task again",
           "budget": "Orchestration budget exhausted (tokens)", "budget_warning": "Budget: ",
           "usage": " tokens, $", "dimension": "(tokens)"},
    "cs": {"cancelled": "Orchestrace zrušena uživatelem",
           "cloud_rejected": "Lokální model selhal a použití cloudového modelu bylo zamítnuto",
           "suspended": "Orchestrace pozastavena (restart služby); bude obnovena z posledního checkpointu",
           "restarted": "Orchestrace přerušena restartem služby — spusťte úlohu znovu",
           "budget": "Rozpočet orchestrace vyčerpán (tokeny)", "budget_warning": "Rozpočet: ",
           "usage": " tokenů, ", "dimension": "(tokeny)"},
}
LANGUAGES = [pytest.param(ENGLISH, "en", id="en"), pytest.param(CZECH, "cs", id="cs")]


@pytest.fixture
async def pod(mongo_server: Any, llm: Any, kotlin: Any, kb: Any,
              tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """`pod(**settings)` starts one pod (response_language `auto` unless overridden); its
    `stop()` is a SIGTERM."""
    suffix = new_task_id()[:10]
    base = {"mongodb_url": mongo_server.url, "mongodb_database": f"svc_{suffix}",
            "checkpoint_database": f"ckpt_{suffix}", "ollama_url": llm.url, "local_model": "test-model",
            "kotlin_server_url": kotlin.url, "knowledgebase_url": kb.url, "data_root": tmp_path / "data",
            "heartbeat_dead_seconds": 10, "kb_timeout_seconds": 2, "llm_retry_base_delay": 0.01,
            "shutdown_grace_seconds": 0.2, "pod_id": "pod-texts"}
    async with AsyncExitStack() as stack:
        async def start(**overrides: Any) -> Pod:
            pod_stack = await stack.enter_async_context(AsyncExitStack())
            started = await start_pod(pod_stack, Settings(**(base | overrides)))
            started.stop = pod_stack.aclose  # type: ignore[attr-defined]
            return started

        yield start


@pytest.fixture
def hold() -> Any:
    """Keeps a scripted reply waiting; released at the end whatever happened."""
    event = threading.Event()
    yield event
    event.set()


def request(query: str, **fields: Any) -> OrchestrateRequest:
    return OrchestrateRequest.model_validate(orchestrate_body(query=query, **fields))


async def error_of(kotlin: Any, thread_id: str) -> str:
    return str((await asyncio.to_thread(kotlin.wait_for_status, thread_id=thread_id, status="error"))["error"])



def held_answer(hold: threading.Event) -> list[Reply]:
    """An answer whose respond call waits for `hold`: the run is mid-node until then."""
    return [Reply(match=node_marker("intake"), content=classification(), name="intake"),
            Reply(match=node_marker("respond"), content="-", hold=hold, name="respond")]


@pytest.mark.parametrize(("query", "language"), LANGUAGES)
async def test_cancelling_a_waiting_run_says_so_in_its_language(pod, llm, kotlin, query: str, language: str) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification(goal_clear=False, questions=["Which?"])))
    started = await pod()
    run = await started.manager.start(request(query))
    assert (await started.manager.wait(run)).status == "interrupted"

    await started.manager.cancel(run.identity.thread_id)

    assert await error_of(kotlin, run.identity.thread_id) == SAID[language]["cancelled"]


@pytest.mark.parametrize(("query", "language"), LANGUAGES)
async def test_cancelling_a_running_run_says_so_in_its_language(pod, llm, kotlin, hold, query: str,
                                                                language: str) -> None:
    llm.script(*held_answer(hold))
    started = await pod()
    run = await started.manager.start(request(query))
    await until(lambda: any(r.matched == "respond" for r in llm.requests), "the respond call")

    await started.manager.cancel(run.identity.thread_id)

    assert await error_of(kotlin, run.identity.thread_id) == SAID[language]["cancelled"]


@pytest.mark.parametrize(("query", "language"), LANGUAGES)
async def test_a_refused_cloud_model_is_said_in_the_runs_language(pod, llm, kotlin, query: str,
                                                                   language: str) -> None:
    llm.script(Reply(match=node_marker("intake"), status=500, error_body="model crashed", times=3))
    started = await pod(anthropic_api_key="test-key", anthropic_api_base=llm.url)
    run = await started.manager.start(request(query))
    assert (await started.manager.wait(run)).interrupt_action == "cloud_model"

    assert await started.manager.resume(run.identity.thread_id, ApprovalResponse(approved=False, reason="no")) is None

    assert await error_of(kotlin, run.identity.thread_id) == SAID[language]["cloud_rejected"]


@pytest.mark.parametrize(("query", "language"), LANGUAGES)
async def test_a_run_suspended_at_shutdown_says_so_in_its_language(pod, llm, hold, query: str,
                                                                   language: str) -> None:
    llm.script(*held_answer(hold))
    started = await pod()
    run = await started.manager.start(request(query))
    await until(lambda: any(r.matched == "respond" for r in llm.requests), "the respond call")
    stored = await started.runs.get(run.identity.thread_id)

    await started.stop()

    assert (await started.manager.wait(run)).error == SAID[language]["suspended"]
    assert stored is not None and stored.language == language  # known from the start, for a later restart


@pytest.mark.parametrize(("stored", "configured", "language"), [
    pytest.param("cs", "en", "cs", id="stored-cs"),
    pytest.param(None, "en", "en", id="configured-en"),
])
async def test_a_run_lost_before_its_first_checkpoint_is_ended_in_its_language(
        pod, kotlin, stored: str | None, configured: str, language: str) -> None:
    """Its pod died before the first checkpoint: the language stored with the run record, else the
    configured one."""
    adopter = await pod(response_language=configured)
    task_id = new_task_id()
    thread_id = new_thread_id(task_id)
    await adopter.runs.create(RunRecord(thread_id=thread_id, task_id=task_id, client_id="c1", status="running",
                                        pod_id="pod-gone", language=stored, created_at=time.time(),
                                        updated_at=time.time()))

    assert await adopter.recovery.recover_once() == []  # nothing to continue: ended instead

    assert await error_of(kotlin, thread_id) == SAID[language]["restarted"]


async def test_a_run_started_again_once_and_lost_again_is_ended_not_restarted_forever(pod, llm, kotlin) -> None:
    """The stored request starts a run lost before its first checkpoint once; lost a second time
    (the request may be what kills its pod), it is ended saying so."""
    adopter = await pod(response_language="en")
    body = request(ENGLISH)
    thread_id = new_thread_id(body.task_id)
    await adopter.runs.create(RunRecord(thread_id=thread_id, task_id=body.task_id, client_id=body.client_id,
                                        status="running", pod_id="pod-gone", language="en", restarts=1,
                                        pending=body.model_dump(mode="json"), created_at=time.time(),
                                        updated_at=time.time()))

    assert await adopter.recovery.recover_once() == []

    assert await error_of(kotlin, thread_id) == SAID["en"]["restarted"]
    assert not llm.requests  # not started a second time


@pytest.mark.parametrize(("query", "language"), LANGUAGES)
async def test_a_spent_budget_is_said_in_the_runs_language(pod, llm, kotlin, query: str, language: str) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification(), name="intake"),
               Reply(match=node_marker("respond"), content="-", name="respond"))
    started = await pod(budget_on_exceeded="stop")  # the run ends with the spent budget said
    body = request(query, budget={"max_tokens": 10})
    run = await started.manager.start(body)

    error = await error_of(kotlin, run.identity.thread_id)
    warning = await until(lambda: next((p["message"] for p in kotlin.progress if p["taskId"] == body.task_id
                                        and "%" in (p["message"] or "")), None), "the budget warning")

    assert SAID[language]["budget"] in error
    assert SAID[language]["usage"] in error  # the figures too, not only the frame
    assert warning.startswith(SAID[language]["budget_warning"])
    assert SAID[language]["dimension"] in warning
