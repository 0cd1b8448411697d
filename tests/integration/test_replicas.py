"""Two replicas of the service on one nx-27017 and one DATA_ROOT (the local runner standing in for
the shared volume): load spread over both within the cluster's slots, a kill -9 of one replica
mid-step adopted by the other (its agent re-attached, not run twice), a SIGTERM handed over at
once, and Kotlin down meanwhile — every run ends exactly once, with exactly one status push.

Nothing here waits a fixed time: runs are held where the test needs them (an LLM call on a
`threading.Event`, an agent on a release file) and the state is read from MongoDB, `/status`
and the service's log with a deadline."""

from __future__ import annotations

import json
import shlex
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import httpx
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
#: Rounds of one held run per replica, then refused requests to both: 4 × (2 + 3) = twenty requests.
ROUNDS = 4
REFUSED_PER_ROUND = 3


class Store:
    """The replicas' MongoDB collections, read directly: what the cluster holds at this moment."""

    def __init__(self, mongo_url: str, database: str) -> None:
        self._client: MongoClient[dict[str, Any]] = MongoClient(mongo_url)
        self._db = self._client[database]

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self._client.close()

    def running(self) -> int:
        return self._db["orchestrator_runs"].count_documents({"status": "running"})

    def slots_taken(self) -> int:
        return self._db["orchestrator_locks"].count_documents({"locked_by": {"$ne": None}})

    def undelivered(self, thread_ids: list[str]) -> list[dict[str, Any]]:
        """Status pushes of these runs not yet settled as delivered (pending, or not even stored)."""
        stored = list(self._db["orchestrator_outbox"].find({"kind": "status", "thread_id": {"$in": thread_ids}},
                                                           {"thread_id": 1, "state": 1}))
        missing = set(thread_ids) - {doc["thread_id"] for doc in stored}
        return [doc for doc in stored if doc["state"] != "delivered"] + [{"thread_id": t} for t in missing]


def start_together(*replicas: ServiceProcess) -> list[ServiceProcess]:
    """The replicas started at once, as a deployment's pods are (and in about half the time)."""
    with ThreadPoolExecutor(len(replicas)) as pool:
        return list(pool.map(ServiceProcess.start, replicas))


def called(llm: Any, name: str) -> int:
    return len([r for r in llm.requests if r.matched == name])


def test_twenty_requests_over_two_replicas_each_accepted_run_ends_once_with_kotlin_down_meanwhile(
        service_factory: Any, llm: Any, mongo_server: Any, kb_server: Any, data_root: Path) -> None:
    """Rounds of five requests: one run per replica takes the cluster's two slots and is held in its
    LLM call, so the next three (to either replica) are refused while MongoDB shows exactly two
    runs running and two slots taken; then they are let go and end. Every status waits in the
    outbox for Kotlin and, once every one is delivered (nothing left to send again), each run has
    exactly one."""
    kotlin = FakeKotlinServer().start()
    kotlin.stop()  # down while the requests come: every status waits in the outbox
    env = service_env(mongo_url=mongo_server.url, llm_url=llm.url, kotlin_url=kotlin.url, kb_url=kb_server.url,
                      data_root=data_root, max_concurrent_orchestrations=SLOTS, push_timeout_seconds=1,
                      outbox_lease_seconds=2, outbox_retry_base_seconds=0.2, outbox_retry_max_seconds=0.5,
                      outbox_poll_seconds=0.3)
    pods = start_together(service_factory(env={**env, "POD_ID": "replica-a"}),
                          service_factory(env={**env, "POD_ID": "replica-b"}))
    codes: dict[str, list[int]] = {"replica-a": [], "replica-b": []}
    accepted: list[str] = []

    def request(pod: ServiceProcess) -> httpx.Response:
        with pod.client() as client:
            response = client.post("/orchestrate/stream", json=orchestrate_body())
        codes[pod.env["POD_ID"]].append(response.status_code)
        return response

    def ended(thread_ids: list[str]) -> bool:
        with pods[0].client() as client:
            return all(client.get(f"/status/{t}").json()["status"] == "done" for t in thread_ids)

    try:
        with Store(mongo_server.url, env["MONGODB_DATABASE"]) as store:
            for _ in range(ROUNDS):
                release = threading.Event()
                llm.reset()
                llm.script(Reply(match=node_marker("intake"), content=classification()),
                           Reply(match=node_marker("respond"), content="Odpověď repliky", hold=release,
                                 name="respond"))
                held = [request(pod) for pod in pods]  # one per replica: the cluster's slots are free
                assert [r.status_code for r in held] == [200, 200], [r.text for r in held]
                round_runs = [r.json()["thread_id"] for r in held]
                accepted += round_runs
                try:
                    wait_until(lambda: called(llm, "respond") == SLOTS, timeout=30,
                               what="both runs of the round in their held LLM call")
                    refused = [request(pods[k % 2]).status_code for k in range(REFUSED_PER_ROUND)]
                    assert refused == [429] * REFUSED_PER_ROUND  # the other replica's run counts too
                    assert (store.running(), store.slots_taken()) == (SLOTS, SLOTS)
                finally:
                    release.set()
                wait_until(partial(ended, round_runs), timeout=30, what="the round's runs to end")
                wait_until(lambda: store.slots_taken() == 0, timeout=10, what="the round's slots to be free")
            kotlin.start()  # back: the outbox, claimed by either replica, delivers each status
            wait_until(lambda: not store.undelivered(accepted), timeout=60,
                       what="every status to be delivered (after which none is sent again)")
    finally:
        kotlin.stop()

    assert len(codes["replica-a"]) + len(codes["replica-b"]) == ROUNDS * (2 + REFUSED_PER_ROUND) == 20
    assert all(200 in pod_codes and 429 in pod_codes for pod_codes in codes.values()), codes
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
    first = service_factory(pod_id="replica-a", **common)
    second: ServiceProcess = service_factory(env={**first.env, "POD_ID": "replica-b"})
    start_together(first, second)
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
    running = service_factory(pod_id="replica-a", lock_heartbeat_seconds=0.5, response_language="en")
    other = service_factory(env={**running.env, "POD_ID": "replica-b"})
    start_together(running, other)
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
