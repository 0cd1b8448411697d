"""A task sent while another client holds the embedded model's only slot is accepted, waits, and
ends done (issue 31, "Busy is not offline"). The service process runs on the local tiers of an
OpenAI-compatible server, as `scripts/run.sh` sets up the embedded llama-cpp-python model; the
scripted LLM serves one request at a time like it, its model listing included."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import advice_script, orchestrate_body

HEARTBEAT = 1.0
"""Shorter than the hold: a run that outlives it waited in the queue, not under the heartbeat."""
HOLD = 2.5


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_a_task_sent_while_another_client_holds_the_model_waits_and_ends_done(
        service_factory: Any, llm: Any, kotlin: Any, kb: Any, release: threading.Event) -> None:
    service = service_factory(local_llm_api_base=f"{llm.url}/v1", local_llm_model="openai/test-model",
                              heartbeat_dead_seconds=HEARTBEAT, llm_queue_check_seconds=0.2,
                              llm_health_timeout_seconds=0.5).start()
    llm.script(*advice_script("Answered after the other client's generation."))
    llm.occupy(release)  # another client's generation holds the only slot from here on
    held_at = time.monotonic()

    with service.client() as http:
        health = http.get("/health").json()
        local = health["llm_tiers"]["local_fast"]
        assert local["mode"] == "BUSY" and local["detail"].endswith("serving another request"), local
        assert health["status"] == "ok" and http.get("/health/ready").status_code == 200

        body = orchestrate_body(query="Co umíš?")
        response = http.post("/orchestrate/stream", json=body)
        assert response.status_code == 200, response.text
        thread_id = response.json()["thread_id"]

        llm.wait_for_slot_waiters(1)  # the run's first call (intake) waits for the slot, connected
        llm.wait_until(lambda: time.monotonic() - held_at > HOLD or None, HOLD + 5, lambda: "the hold")
        assert http.get(f"/status/{thread_id}").json()["status"] == "running"
        assert [s for s in kotlin.statuses if s.get("threadId") == thread_id] == []  # not refused, not ended
        release.set()

        done = kotlin.wait_for_status(thread_id=thread_id, status="done", timeout=30)
    assert done["summary"] == "Answered after the other client's generation."
    assert [r.matched for r in llm.requests] == ["occupant", "respond"]  # the intake needed no model here
    log = service.log_path.read_text(errors="replace")
    assert "waiting for the local model (busy)" in log
