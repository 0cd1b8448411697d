"""Two replicas of the service on one nx-27017 and one DATA_ROOT (the local runner standing in for
the shared volume): load spread over both within the cluster's slots, a kill -9 of one replica
mid-step adopted by the other (its agent re-attached, not run twice), a SIGTERM handed over at
once, and Kotlin down meanwhile — every run ends exactly once, with exactly one status push."""

from __future__ import annotations

import json
import shlex
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.llm_server import Reply
from tests.fixtures.service import ServiceProcess, service_env
from tests.support import (
    SCRIPTED_AGENT,
    approval,
    classification,
    code_task_script,
    make_git_repo,
    new_task_id,
    node_marker,
    orchestrate_body,
    wait_until,
)

pytestmark = pytest.mark.slow

SLOTS = 2


class RunningCount:
    """The most runs MongoDB ever held `running` at once, sampled every 10 ms in a thread."""

    def __init__(self, mongo_url: str, database: str) -> None:
        self._client: MongoClient[dict[str, Any]] = MongoClient(mongo_url)
        self._runs = self._client[database]["orchestrator_runs"]
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> RunningCount:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._client.close()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.most = max(self.most, self._runs.count_documents({"status": "running"}))
            time.sleep(0.01)


def test_twenty_requests_over_two_replicas_each_accepted_run_ends_once_with_kotlin_down_meanwhile(
        service_factory: Any, llm: Any, mongo_server: Any, kb_server: Any, data_root: Path) -> None:
    kotlin = FakeKotlinServer().start()
    kotlin.stop()  # down while the requests come: every status waits in the outbox
    env = service_env(mongo_url=mongo_server.url, llm_url=llm.url, kotlin_url=kotlin.url, kb_url=kb_server.url,
                      data_root=data_root, max_concurrent_orchestrations=SLOTS, push_timeout_seconds=1,
                      outbox_lease_seconds=2, outbox_retry_base_seconds=0.2, outbox_retry_max_seconds=0.5,
                      outbox_poll_seconds=0.3)
    llm.script(Reply(match=node_marker("intake"), content=classification()),
               Reply(match=node_marker("respond"), content="Odpověď repliky", delay_before=0.4))
    pods = [service_factory(env={**env, "POD_ID": "replica-a"}).start(),
            service_factory(env={**env, "POD_ID": "replica-b"}).start()]
    codes: dict[str, list[int]] = {"replica-a": [], "replica-b": []}
    accepted: list[str] = []
    try:
        with RunningCount(mongo_server.url, env["MONGODB_DATABASE"]) as running:
            for n in range(20):
                pod = pods[n % 2]
                with pod.client() as client:
                    response = client.post("/orchestrate/stream", json=orchestrate_body())
                codes[pod.env["POD_ID"]].append(response.status_code)
                if response.status_code == 200:
                    accepted.append(response.json()["thread_id"])
                time.sleep(0.15)
            with pods[0].client() as client:
                wait_until(lambda: all(client.get(f"/status/{t}").json()["status"] == "done" for t in accepted)
                           or None, timeout=60, what="every accepted run to end")
        kotlin.start()  # back: the outbox, claimed by either replica, delivers each status once
        wait_until(lambda: {s["threadId"] for s in kotlin.statuses} >= set(accepted) or None, timeout=60,
                   what="every status to reach Kotlin")
        time.sleep(1.5)  # a second delivery, if any, would arrive within the outbox's retry time
    finally:
        kotlin.stop()

    assert all(code in (200, 429) for pod_codes in codes.values() for code in pod_codes), codes
    assert all(200 in pod_codes for pod_codes in codes.values()), codes  # both replicas took work
    assert 429 in codes["replica-a"] + codes["replica-b"]  # the cluster's slots were full at times
    assert running.most <= SLOTS
    statuses = [s for s in kotlin.statuses if s["threadId"] in accepted]
    assert sorted(s["threadId"] for s in statuses) == sorted(accepted)  # one status per run, none doubled
    assert {s["status"] for s in statuses} == {"done"} and kotlin.violations == []


def held_agent(folder: Path) -> list[str]:
    """The scripted agent, started once per line in `starts.txt`, held until `go` exists (≤ 60 s)."""
    return ["sh", "-c", f"echo started >> {shlex.quote(str(folder / 'starts.txt'))}; for i in $(seq 600); do "
                        f"[ -e {shlex.quote(str(folder / 'go'))} ] && break; sleep 0.1; done; "
                        f"exec {shlex.join(SCRIPTED_AGENT)}"]


@pytest.mark.parametrize("end", ["kill", "sigterm"])
def test_a_replica_that_dies_or_stops_mid_step_hands_its_run_to_the_other(
        service_factory: Any, llm: Any, kotlin: Any, data_root: Path, end: str) -> None:
    """kill -9: the other replica adopts once the slot is stale (2 s here); SIGTERM: at its next
    recovery round, without waiting for the stale time (300 s here). Either way the agent is
    re-attached, never started again, and Kotlin hears one status."""
    task_dir = data_root / "clients" / "c1" / new_task_id()
    repo = make_git_repo(task_dir / "repo")
    llm.script(*code_task_script())
    stale = 2 if end == "kill" else 300
    common = {"local_agent_command": json.dumps(held_agent(task_dir)), "lock_stale_seconds": stale,
              "agent_sandbox_writable": json.dumps([str(task_dir)]),  # the counter and the release, beside the repo
              "lock_heartbeat_seconds": 0.5, "recovery_interval_seconds": 0.5, "shutdown_grace_seconds": 0.5}
    first = service_factory(pod_id="replica-a", **common).start()
    second: ServiceProcess = service_factory(env={**first.env, "POD_ID": "replica-b"}).start()
    body = orchestrate_body(workspace_path=repo.relative_to(data_root).as_posix())
    with first.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    wait_until((task_dir / "starts.txt").exists, what="the agent to start")
    began = time.monotonic()
    first.kill() if end == "kill" else first.stop()

    wait_until(lambda: "re-attaching to agent" in second.log_tail(400), timeout=30, what="the re-attach")
    assert time.monotonic() - began < 30  # not the stale time of a SIGTERM'd replica
    (task_dir / "go").touch()
    asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted", timeout=60)
    assert asked["interruptAction"] == "commit"
    with second.client() as client:
        assert client.post(f"/approve/{thread_id}", json=approval(True, "ano")).status_code == 200
    kotlin.wait_for_status(thread_id=thread_id, status="done", timeout=30)

    assert (task_dir / "starts.txt").read_text().splitlines() == ["started"]  # the agent ran once
    ended = [(s["status"], s.get("interruptAction")) for s in kotlin.statuses if s["threadId"] == thread_id]
    assert ended == [("interrupted", "commit"), ("done", None)]
    with second.client() as client:
        assert "jervis_runs_adopted_total 1.0" in client.get("/metrics").text


def test_a_cancel_that_reaches_the_other_replica_cancels_the_run(service_factory: Any, llm: Any, kotlin: Any) -> None:
    """/cancel is not routed to the pod that runs the run: the other replica marks the run's lock
    slot, and the running pod's next heartbeat cancels it (one error status, its agent stopped)."""
    llm.script(Reply(match=node_marker("intake"), content=classification()),
               Reply(match=node_marker("respond"), content="never", delay_before=60, name="respond-slow"))
    running = service_factory(pod_id="replica-a", lock_heartbeat_seconds=0.5, response_language="en").start()
    other = service_factory(env={**running.env, "POD_ID": "replica-b"}).start()
    with running.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body()).json()["thread_id"]
    wait_until(lambda: any(r.matched == "respond-slow" for r in llm.requests), what="the run to be in its LLM call")
    with other.client() as client:
        assert client.post(f"/cancel/{thread_id}").status_code == 200
    ended = kotlin.wait_for_status(thread_id=thread_id, status="error", timeout=15)
    assert "cancel" in ended["error"].lower()
    with other.client() as client:
        assert client.get(f"/status/{thread_id}").json()["status"] == "error"
    assert len([s for s in kotlin.statuses if s["threadId"] == thread_id]) == 1
