"""Operability of a real service process: probes, the stop at SIGTERM, `/metrics` after
orchestrations, JSON logs that carry the run's ids and never a configured secret."""

from __future__ import annotations

import json
import secrets
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pymongo import MongoClient

from app.dev.embedded_mongo import EmbeddedMongo
from tests.fixtures.llm_server import Reply
from tests.support import (
    advice_script,
    approval,
    classification,
    code_task_script,
    free_port,
    kotlin_rules,
    make_git_repo,
    new_task_id,
    node_marker,
    orchestrate_body,
    wait_until,
)

pytestmark = pytest.mark.slow

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: httpx.Client) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(response.text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum over the series of `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


def log_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_metrics_count_a_code_orchestration(service, llm, kotlin, data_root: Path) -> None:
    rel = f"clients/c1/{new_task_id()}"
    make_git_repo(data_root / rel)
    llm.script(*code_task_script())
    with service.client() as client:
        before = scrape(client)
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body(workspace_path=rel)).json()["thread_id"]
        kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
        client.post(f"/approve/{thread_id}", json=approval(True, "ano"))
        kotlin.wait_for_status(thread_id=thread_id, status="done")
        after = scrape(client)

    def delta(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert delta("jervis_orchestrations_total", outcome="interrupted") == 1
    assert delta("jervis_orchestrations_total", outcome="done") == 1
    for node in ("intake", "plan", "execute_step", "evaluate", "git_operations", "finalize"):
        assert delta("jervis_node_duration_seconds_count", node=node, outcome="ok") >= 1, node
    assert delta("jervis_llm_tokens_total", kind="prompt") > 0
    assert delta("jervis_llm_tokens_total", kind="completion") > 0
    assert delta("jervis_llm_calls_total", outcome="ok") == 2  # intake and the single task's step plan
    assert delta("jervis_llm_call_duration_seconds_count") == 2
    assert delta("jervis_agent_jobs_total", agent="aider", mode="agent", outcome="success") == 1
    assert delta("jervis_agent_jobs_total", agent="claude", mode="commit", outcome="success") == 1
    assert value(after, "jervis_lock_slots", state="free") == 1  # the run is over, its slot released
    assert value(after, "jervis_orchestrations_active") == 0
    assert ("jervis_kotlin_push_failures_total" in {name for name, _ in after}
            or delta("jervis_kotlin_push_failures_total") == 0)


def test_a_busy_pod_counts_rejections_and_shows_its_held_slot(service, llm, kotlin) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification(), delay_before=1.5, name="slow-intake"),
               *advice_script()[1:])
    with service.client() as client:
        before = scrape(client)
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body()).json()["thread_id"]
        assert client.post("/orchestrate/stream", json=orchestrate_body()).status_code == 429
        during = scrape(client)
        kotlin.wait_for_status(thread_id=thread_id, status="done")
    assert total(during, "jervis_orchestration_rejections_total") - total(
        before, "jervis_orchestration_rejections_total") == 1
    assert value(during, "jervis_lock_slots", state="held_here") == 1
    assert value(during, "jervis_orchestrations_active") == 1


def test_liveness_and_readiness_part_when_mongodb_goes_away(service_factory, tmp_path: Path) -> None:
    mongo = EmbeddedMongo(work_dir=tmp_path)
    proc = service_factory(mongodb_url=mongo.start()).start()
    try:
        with proc.client() as client:
            assert client.get("/health/live").json() == {"status": "alive"}
            ready = client.get("/health/ready")
            assert ready.status_code == 200 and ready.json()["status"] == "ready"
            mongo.stop()
            not_ready = client.get("/health/ready")
            assert not_ready.status_code == 503
            assert not_ready.json()["mongodb"]["status"] == "down"
            assert client.get("/health/live").status_code == 200  # not restarted for an outage
            assert client.get("/health").json()["status"] == "degraded"  # Kotlin's view
    finally:
        # Not a graceful stop: with MongoDB gone, closing the checkpointer's client waits for
        # server selection (up to pymongo's 30 s), which is not what this test is about.
        proc.kill()
        mongo.stop()


def test_sigterm_stops_listening_then_suspends_the_run_despite_an_open_stream(service_factory, llm, kotlin) -> None:
    """What the Deployment relies on (k8s/app_orchestrator.yaml). At SIGTERM uvicorn stops
    listening at once: both probes fail by connection, and the pod gets no new request, while it
    still runs. It then waits for open connections before the app's shutdown; an SSE stream of a
    running run would hold it until the run ends (and the kubelet's SIGKILL would leave the lock
    slot to go stale), so UVICORN_TIMEOUT_GRACEFUL_SHUTDOWN bounds the wait: the stream is cut, the
    run suspended and its lock slot freed for another pod."""
    llm.script(Reply(match=node_marker("intake"), content=classification(), name="intake"),
               Reply(match=node_marker("respond"), content="never", delay_before=60, name="respond-slow"))
    proc = service_factory(shutdown_grace_seconds=1, heartbeat_dead_seconds=120,
                           uvicorn_timeout_graceful_shutdown=2).start()
    with proc.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body()).json()["thread_id"]
    wait_until(lambda: any(r.matched == "respond-slow" for r in llm.requests), what="the slow respond call")
    streaming, cut = threading.Event(), threading.Event()

    def follow() -> None:
        try:
            with httpx.stream("GET", f"{proc.url}/stream/{thread_id}", timeout=90) as stream:
                for _ in stream.iter_lines():
                    streaming.set()
        except httpx.RemoteProtocolError:  # closed in the middle of the chunked body
            cut.set()

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    assert streaming.wait(10)
    assert proc.proc is not None
    started = time.monotonic()
    proc.proc.send_signal(signal.SIGTERM)

    def refused() -> bool:
        try:
            httpx.get(f"{proc.url}/health/live", timeout=1)
        except httpx.ConnectError:
            return True
        return False

    assert wait_until(refused, timeout=5, what="the listener closed")
    assert proc.proc.poll() is None, "still running: the connection was refused by a stopping pod"
    proc.proc.wait(20)
    stopped = time.monotonic() - started
    reader.join(5)

    assert stopped < 2 + 1 + 10, f"{stopped:.1f} s: the open stream held the shutdown"
    assert cut.is_set(), "the stream was cut, not ended"
    assert any(line["message"].startswith(f"suspending {thread_id} (shutdown)") for line in log_lines(proc.log_path))
    with MongoClient(proc.env["MONGODB_URL"]) as mongo:
        locks = mongo[proc.env["MONGODB_DATABASE"]]["orchestrator_locks"]
        assert locks.count_documents({"thread_id": thread_id}) == 0, "the lock slot was released"
        runs = mongo[proc.env["MONGODB_DATABASE"]]["orchestrator_runs"]
        assert runs.find_one({"_id": thread_id}, {"status": 1})["status"] == "running", "left for adoption"


def test_no_log_line_carries_a_configured_secret(service_factory, llm, kotlin, kb, data_root: Path) -> None:
    """The Anthropic API answers 401 quoting the key (as providers do) and the KB URL carries a
    password: the run fails and logs the error, redacted; every line is JSON with the run's ids."""
    api_key = f"anthropic-test-{secrets.token_hex(12)}"  # no known key shape: only configuration can tell
    kb_password = f"kbpw-{secrets.token_hex(6)}"
    git_token = f"gittok-{secrets.token_hex(8)}"
    kb_url = kb.url.replace("http://", f"http://jervis:{kb_password}@")
    proc = service_factory(anthropic_api_key=api_key, anthropic_api_base=llm.url, knowledgebase_url=kb_url,
                           git_token=git_token, log_level="DEBUG").start()
    error_body = json.dumps({"type": "error", "error": {"type": "authentication_error",
                                                       "message": f"The API key {api_key} is not valid"}})
    llm.script(Reply(match=node_marker("intake"), status=500, error_body="model crashed", times=3),
               Reply(match=node_marker("intake"), status=401, error_body=error_body, name="cloud-401"))
    with proc.client() as client:
        body = orchestrate_body(rules=kotlin_rules(auto_use_anthropic=True), query=f"Shrň projekt ({git_token})")
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
        failed = kotlin.wait_for_status(thread_id=thread_id, status="error")
        assert client.get(f"/status/{thread_id}").json()["status"] == "error"
        client.post(f"/cancel/{thread_id}")  # a command naming the run (an answered poll leaves no access line)
    assert "The API key *** is not valid" in failed["error"]  # what Kotlin shows is masked too
    proc.stop()

    text = proc.log_path.read_text()
    for secret in (api_key, kb_password, git_token):
        assert secret not in text
    lines = log_lines(proc.log_path)  # every line is one JSON object
    run_lines = [line for line in lines if line["thread_id"] == thread_id]
    assert any("The API key *** is not valid" in line["message"] for line in run_lines)  # logged, redacted
    assert any(line["logger"] == "uvicorn.access" for line in run_lines)  # requests naming the run
    from_the_run = [line for line in lines if line["logger"].startswith(("app.runs", "app.llm", "app.graph"))
                    and thread_id in line["message"]]
    assert from_the_run and all(line["thread_id"] == thread_id and line["task_id"] == body["task_id"]
                                for line in from_the_run)


def test_push_failures_are_counted(service_factory, llm) -> None:
    """Kotlin unreachable: the run still completes (pushes never block it), every failed attempt is
    counted by endpoint and logged naming the run, and the status waits in the outbox."""
    proc = service_factory(kotlin_server_url=f"http://127.0.0.1:{free_port()}").start()
    llm.script(*advice_script())
    with proc.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body()).json()["thread_id"]
        wait_until(lambda: client.get(f"/status/{thread_id}").json()["status"] == "done" or None, what="done")
        wait_until(lambda: value(scrape(client), "jervis_kotlin_push_attempt_failures_total",
                                 endpoint="/internal/orchestrator-status") >= 1 or None, what="status attempt counted")
        failures = scrape(client)
    assert value(failures, "jervis_kotlin_push_attempt_failures_total", endpoint="/internal/orchestrator-progress") >= 1
    assert value(failures, "jervis_outbox_depth") >= 1 and value(failures, "jervis_outbox_oldest_age_seconds") > 0
    assert total(failures, "jervis_kotlin_push_failures_total") == 0  # nothing is given up before it expires
    warnings = [line for line in log_lines(proc.log_path)
                if line["logger"] == "app.clients.delivery" and "failed (attempt" in line["message"]]
    assert len(warnings) >= 2  # each failed push is logged, naming the run that produced it
    assert all(line["thread_id"] == thread_id and line["task_id"] == thread_id.split("-")[1] for line in warnings)
