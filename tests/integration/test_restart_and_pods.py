"""Durability and the cluster-wide limit: real service processes sharing one nx-27017."""

from __future__ import annotations

import json
import shlex
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from pymongo import MongoClient

from tests.fixtures.kotlin_server import STATUS, FakeKotlinServer
from tests.fixtures.llm_server import Reply
from tests.fixtures.mongo import RestartableMongo
from tests.fixtures.service import ServiceProcess, service_env
from tests.support import (
    SCRIPTED_AGENT,
    advice_script,
    approval,
    classification,
    code_task_script,
    git,
    make_git_repo,
    new_task_id,
    node_marker,
    orchestrate_body,
    wait_until,
)

pytestmark = pytest.mark.slow


def test_interrupted_run_is_resumed_by_a_fresh_process(service_factory, llm, kotlin, data_root: Path) -> None:
    rel = f"clients/c1/{new_task_id()}"
    repo = make_git_repo(data_root / rel)
    llm.script(*code_task_script())
    first = service_factory().start()
    body = orchestrate_body(workspace_path=rel)
    with first.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
    first.stop()

    second = service_factory(env=first.env).start()
    with second.client() as client:
        assert client.get(f"/status/{thread_id}").json()["interrupt_action"] == "commit"
        assert client.post(f"/approve/{thread_id}", json=approval(True, "ano")).status_code == 200
        done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert done["branch"] == f"task/{body['task_id']}" and done["artifacts"] == ["app/health.py"]
    assert git(repo, "rev-list", "--count", done["branch"]).strip() == "2"
    resumed = [p for p in kotlin.progress if p["taskId"] == body["task_id"]]
    assert all(p["clientId"] == body["client_id"] for p in resumed)


def test_service_killed_mid_step_reattaches_to_its_local_agent_on_restart(service_factory, llm, kotlin,
                                                                          data_root: Path) -> None:
    """kill -9 while the local agent works: the agent survives the service, and the restarted
    service (same POD_ID: it adopts at once) follows it instead of starting the step again. The
    agent holds on until the test lets it go (at most 60 s), so the restart, however slow, finds
    it running."""
    task_dir = data_root / "clients" / "c1" / new_task_id()
    repo = make_git_repo(task_dir / "repo")
    starts, go = task_dir / "starts.txt", task_dir / "go"  # beside the workspace, outside git (and its sandbox)
    held = ["sh", "-c", "echo started >> ../starts.txt; for i in $(seq 600); do [ -e ../go ] && break; sleep 0.1; "
                        f"done; exec {shlex.join(SCRIPTED_AGENT)}"]
    llm.script(*code_task_script())
    pod = service_factory(pod_id="orchestrator-0", local_agent_command=json.dumps(held),
                          agent_sandbox_writable=json.dumps([str(task_dir)])).start()
    body = orchestrate_body(workspace_path=repo.relative_to(data_root).as_posix())
    with pod.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    wait_until(starts.exists, what="the agent to start")
    pod.kill()

    restarted = service_factory(env=pod.env).start()
    wait_until(lambda: "re-attaching to agent" in restarted.log_tail(400), what="the re-attach")
    go.touch()
    asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted", timeout=60)
    assert asked["interruptAction"] == "commit"
    with restarted.client() as client:
        assert client.post(f"/approve/{thread_id}", json=approval(True, "ano")).status_code == 200
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert starts.read_text().splitlines() == ["started"]  # the step ran once
    assert git(repo, "show", "--name-only", "--format=", done["branch"]).split() == ["app/health.py"]


def test_two_pods_share_one_orchestration_slot(service_factory, llm, kotlin) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification(), delay_before=30))
    pod_a = service_factory().start()
    pod_b = service_factory(env={**pod_a.env, "POD_ID": "pod-b"}).start()
    with pod_a.client() as a, pod_b.client() as b:
        thread_id = a.post("/orchestrate/stream", json=orchestrate_body()).json()["thread_id"]
        kotlin.wait_for_progress(node="intake")

        assert b.get("/health").json()["busy"] is False  # its own semaphore is free…
        refused = b.post("/orchestrate/stream", json=orchestrate_body())
        assert refused.status_code == 429  # …but the MongoDB lock is not
        assert b.get(f"/status/{thread_id}").json()["status"] == "running"  # B sees A's lock

        a.post(f"/cancel/{thread_id}")
        kotlin.wait_for_status(thread_id=thread_id, status="error")
        llm.script(Reply(match=node_marker("intake"), content=classification()),
                   Reply(match=node_marker("respond"), content="B běží"))
        accepted = b.post("/orchestrate/stream", json=orchestrate_body())
        assert accepted.status_code == 200
        assert kotlin.wait_for_status(thread_id=accepted.json()["thread_id"], status="done")["summary"] == "B běží"


def slow_then_fast_respond(answer: str, hold: threading.Event | None = None) -> list[Reply]:
    """intake and evidence are instant; the first respond call hangs (the pod dies in it); the
    next one answers at once, or once `hold` is set."""
    return [
        Reply(match=node_marker("intake"), content=classification(), name="intake"),
        Reply(match=node_marker("respond"), content="never", delay_before=60, times=1, name="respond-slow"),
        Reply(match=node_marker("respond"), content=answer, name="respond", hold=hold),
    ]


def wait_for_slow_respond(llm: Any) -> None:
    """The dying pod must be inside its LLM call (not just past the progress push)."""
    wait_until(lambda: any(r.matched == "respond-slow" for r in llm.requests), what="the slow respond call")


def nodes_of(kotlin: Any, task_id: str) -> list[str]:
    return [p["node"] for p in kotlin.progress if p["taskId"] == task_id]


def wait_for_heartbeat_settled(mongo_url: str, service: ServiceProcess, task_id: str) -> None:
    """The task's delivered progress push no longer stored (its deferred delete done)."""
    with MongoClient(mongo_url) as mongo:
        outbox = mongo[service.env["MONGODB_DATABASE"]]["orchestrator_outbox"]
        wait_until(lambda: outbox.find_one({"_id": f"progress:{task_id}"}) is None,
                   what=f"the delete of progress:{task_id}")


def wait_for_usage(mongo_url: str, service: ServiceProcess, thread_id: str) -> dict[str, Any]:
    """The usage on a run's record, once it has some."""
    with MongoClient(mongo_url) as mongo:
        runs = mongo[service.env["MONGODB_DATABASE"]]["orchestrator_runs"]

        def usage() -> dict[str, Any] | None:
            found = ((runs.find_one({"_id": thread_id}) or {}).get("usage")) or {}
            return found if found.get("tokens") else None

        return wait_until(usage, what=f"usage on the record of {thread_id}")


def test_crashed_pod_restarting_with_its_default_identity_adopts_at_once(service_factory, llm, kotlin,
                                                                          mongo_server) -> None:
    llm.script(*slow_then_fast_respond("Po restartu"))
    pod = service_factory().start()  # no POD_ID: the id persisted under DATA_ROOT
    body = orchestrate_body()
    with pod.client() as client:
        pod_id = client.get("/health").json()["pod_id"]
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    wait_for_slow_respond(llm)
    before = wait_for_usage(mongo_server.url, pod, thread_id)  # written when intake ended
    # Killed after respond's delivered heartbeat was settled (its delete waits 0.25 s; a kill
    # inside that window sends it once more after the restart, by design).
    wait_for_heartbeat_settled(mongo_server.url, pod, body["task_id"])
    pod.kill()

    restarted = service_factory(env=pod.env).start()  # its old slot still looks alive for 300 s
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert done["summary"] == "Po restartu"
    assert nodes_of(kotlin, body["task_id"]) == ["intake", "evidence_pack", "respond", "respond", "finalize"]
    with restarted.client() as client:
        assert client.get("/health").json()["pod_id"] == pod_id
        status = client.get(f"/status/{thread_id}").json()
        assert status["status"] == "done"
        accepted = client.post("/orchestrate/stream", json=orchestrate_body())  # the dead life's slot is free
        assert accepted.status_code == 200
    assert kotlin.wait_for_status(thread_id=accepted.json()["thread_id"], status="done")["summary"] == "Po restartu"
    assert not [s for s in kotlin.statuses if s["threadId"] == thread_id and s["status"] == "error"]
    # the killed segment's usage is counted with the segment that finished the run
    usage = wait_for_usage(mongo_server.url, restarted, thread_id)
    respond_tokens = sum(u["prompt_tokens"] + u["completion_tokens"]
                         for key, u in usage["by_node_tier"].items() if key.startswith("respond/"))
    assert [key.split("/")[0] for key in before["by_node_tier"]] == ["intake"]
    assert all(usage["by_node_tier"][key] == counts for key, counts in before["by_node_tier"].items())
    assert int(status["llm_tokens"]) == usage["tokens"] >= before["tokens"] + respond_tokens > before["tokens"]


def test_run_of_a_dead_pod_is_adopted_by_another_pod(service_factory, llm, kotlin) -> None:
    release = threading.Event()  # the adopted run cannot end before the survivor was asked about it
    llm.script(*slow_then_fast_respond("Adoptováno", hold=release))
    # A held call sends no token: the token heartbeat must outlast the hold.
    dead = service_factory(lock_stale_seconds=2, lock_heartbeat_seconds=0.5, heartbeat_dead_seconds=30).start()
    body = orchestrate_body()
    with dead.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    wait_for_slow_respond(llm)
    dead.kill()

    survivor = service_factory(env={**dead.env, "POD_ID": "survivor", "RECOVERY_INTERVAL_SECONDS": "0.5"}).start()
    with survivor.client() as client:
        assert client.get(f"/status/{thread_id}").json()["status"] == "running"  # adoption pending
        release.set()
        done = kotlin.wait_for_status(thread_id=thread_id, status="done", timeout=30)

    assert done["summary"] == "Adoptováno"
    assert nodes_of(kotlin, body["task_id"]).count("intake") == 1


def test_graceful_shutdown_suspends_the_run_for_another_pod(service_factory, llm, kotlin) -> None:
    llm.script(*slow_then_fast_respond("Pokračuje jinde"))
    leaving = service_factory(shutdown_grace_seconds=0.5).start()
    body = orchestrate_body()
    with leaving.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    wait_for_slow_respond(llm)
    leaving.stop()  # SIGTERM

    assert not [s for s in kotlin.statuses if s["threadId"] == thread_id]  # Kotlin is not told to fail it
    service_factory(env={**leaving.env, "POD_ID": "next", "RECOVERY_INTERVAL_SECONDS": "0.5"}).start()
    done = kotlin.wait_for_status(thread_id=thread_id, status="done", timeout=30)
    assert done["summary"] == "Pokračuje jinde"


def test_racing_approvals_resume_the_thread_once(service_factory, llm, kotlin, data_root: Path) -> None:
    rel = f"clients/c1/{new_task_id()}"
    repo = make_git_repo(data_root / rel)
    llm.script(*code_task_script())
    pod = service_factory(max_concurrent_orchestrations=2).start()
    with pod.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body(workspace_path=rel)).json()["thread_id"]
        kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
        def approve(_: int) -> int:
            with pod.client() as own:
                return own.post(f"/approve/{thread_id}", json=approval(True, "ano")).status_code

        with ThreadPoolExecutor(2) as pool:
            codes = sorted(pool.map(approve, range(2)))
        assert codes == [200, 409]
        kotlin.wait_for_status(thread_id=thread_id, status="done")
    assert git(repo, "rev-list", "--count", "--all").strip() == "2"
    assert len([s for s in kotlin.statuses if s["threadId"] == thread_id and s["status"] == "done"]) == 1


def status_of(client: Any, thread_id: str) -> str:
    return client.get(f"/status/{thread_id}").json()["status"]


def test_statuses_produced_while_kotlin_is_down_reach_it_after_a_kill(
        service_factory, llm, mongo_server, kb_server, data_root: Path) -> None:
    kotlin = FakeKotlinServer().start()
    kotlin.stop()  # down from the start: every push is refused
    env = service_env(mongo_url=mongo_server.url, llm_url=llm.url, kotlin_url=kotlin.url, kb_url=kb_server.url,
                      data_root=data_root, push_timeout_seconds=1, outbox_lease_seconds=2,
                      outbox_retry_base_seconds=0.2, outbox_retry_max_seconds=0.5, outbox_poll_seconds=0.5)
    mongo: MongoClient[dict[str, Any]] = MongoClient(mongo_server.url)
    outbox = mongo[env["MONGODB_DATABASE"]]["orchestrator_outbox"]
    llm.script(Reply(match=node_marker("intake"), content=lambda request: classification(
                   goal_clear=False, questions=["Který projekt?"]) if "Oprav to" in request.text else classification()),
               Reply(match=node_marker("respond"), content="Hotovo, i když Kotlin spal."))
    pod = service_factory(env=env).start()
    try:
        with pod.client() as client:
            asking = client.post("/orchestrate/stream", json=orchestrate_body(query="Oprav to")).json()["thread_id"]
            wait_until(lambda: status_of(client, asking) == "interrupted" or None, what="the question")
            done = client.post("/orchestrate/stream", json=orchestrate_body()).json()["thread_id"]
            wait_until(lambda: status_of(client, done) == "done" or None, what="the answer")
            # Both statuses are in MongoDB and Kotlin has refused them at least once.
            wait_until(lambda: outbox.count_documents({"kind": "status", "state": "pending",
                                                       "attempts": {"$gte": 1}}) == 2 or None,
                       what="two failed status attempts")
            assert metric(client, "jervis_outbox_depth") >= 2 and metric(client, "jervis_outbox_oldest_age_seconds") > 0
        pod.kill()

        kotlin.start()  # back, on the same port
        restarted = service_factory(env=env).start()
        interrupted = kotlin.wait_for_status(thread_id=asking, status="interrupted", timeout=30)
        finished = kotlin.wait_for_status(thread_id=done, status="done", timeout=30)
        wait_until(lambda: outbox.count_documents({"state": "pending"}) == 0 or None, what="an empty outbox")
        with restarted.client() as client:
            assert metric(client, "jervis_outbox_depth") == 0
    finally:
        kotlin.stop()
        mongo.close()

    assert interrupted["interruptAction"] == "clarify" and finished["summary"] == "Hotovo, i když Kotlin spal."
    # Exactly once per identity, each request carrying its identity as the Idempotency-Key.
    assert sorted((s["threadId"], s["status"]) for s in kotlin.statuses) == sorted([(asking, "interrupted"),
                                                                                   (done, "done")])
    keys = kotlin.accepted_keys(STATUS)
    assert f"status:{done}:done" in keys and any(k.startswith(f"status:{asking}:interrupted:") for k in keys)
    assert kotlin.violations == []


def test_mongodb_stopped_and_started_mid_run_the_run_waits_and_finishes(
        service_factory, restartable_mongo: RestartableMongo, llm, kotlin, kb_server, data_root: Path) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification()),
               Reply(match=node_marker("respond"), content="never shown", delay_before=4, times=1,
                     name="respond-slow"),
               Reply(match=node_marker("respond"), content="Po výpadku MongoDB", name="respond"))
    env = service_env(mongo_url=restartable_mongo.url, llm_url=llm.url, kotlin_url=kotlin.url, kb_url=kb_server.url,
                      data_root=data_root, heartbeat_dead_seconds=10, mongodb_timeout_seconds=1,
                      mongodb_outage_wait_seconds=60)
    pod = service_factory(env=env).start()
    body = orchestrate_body()
    with pod.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
        wait_for_slow_respond(llm)
        restartable_mongo.stop()  # while respond waits for the LLM: its checkpoint write will fail

        assert wait_until(lambda: client.get("/health/ready").status_code == 503, what="not ready")
        assert client.get("/health").json()["status"] == "degraded"
        assert client.get("/health/live").status_code == 200
        wait_until(lambda: metric(client, "jervis_mongodb_waits") == 1, what="the run waiting for MongoDB")
        assert client.get(f"/status/{thread_id}").json()["status"] == "running"

        restartable_mongo.start()
        done = kotlin.wait_for_status(thread_id=thread_id, status="done", timeout=60)
        assert wait_until(lambda: client.get("/health/ready").status_code == 200, what="ready again")
        assert client.get(f"/status/{thread_id}").json()["status"] == "done"

    assert done["summary"] == "Po výpadku MongoDB"
    assert [s["status"] for s in kotlin.statuses if s["threadId"] == thread_id] == ["done"]
    assert [r.matched for r in llm.requests if r.matched and r.matched.startswith("respond")] == [
        "respond-slow", "respond"]  # respond's lost step ran again, from the last checkpoint


def metric(client: httpx.Client, name: str) -> float | None:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    return None


def test_a_yes_and_a_no_sent_at_once_to_one_gate_get_one_answer_and_a_409(service_factory, llm, kotlin,
                                                                           data_root: Path) -> None:
    """One slot in the cluster (the default): the losing answer used to meet the winner's slot and
    get 429 ("busy, try again"); it is 409 with the answer that was taken, and so is a retry."""
    rel = f"clients/c1/{new_task_id()}"
    make_git_repo(data_root / rel)
    llm.script(*code_task_script(), Reply(match=node_marker("interpret_approval"), content=json.dumps(
        {"approved": False, "modification": None, "reason": None})))
    pod = service_factory().start()
    with pod.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body(workspace_path=rel)).json()["thread_id"]
        kotlin.wait_for_status(thread_id=thread_id, status="interrupted")

        def answer(approved: bool) -> httpx.Response:
            with pod.client() as own:
                return own.post(f"/approve/{thread_id}", json=approval(approved, "ano" if approved else "ne"))

        with ThreadPoolExecutor(2) as pool:
            responses = list(pool.map(answer, (True, False)))
        assert sorted(r.status_code for r in responses) == [200, 409], [r.text for r in responses]
        refused = next(r for r in responses if r.status_code == 409).json()
        assert "already answered" in refused["detail"] or "being answered" in refused["detail"]
        wait_until(lambda: status_of(client, thread_id) in ("done", "error"), timeout=30, what="the run to end")
        again = client.post(f"/approve/{thread_id}", json=approval(True, "ano"))
        assert again.status_code == 409
        taken = again.json()["answered"]
        assert taken["interrupt_action"] == "commit" and taken["pod_id"] and taken["answered_at"].endswith("+00:00")
        metrics = client.get("/metrics").text
    ended = [s for s in kotlin.statuses if s["threadId"] == thread_id and s["status"] in ("done", "error")]
    assert len(ended) == 1  # one outcome
    assert "jervis_answers_refused_total 2.0" in metrics


def test_a_run_accepted_just_before_a_kill_ends_with_a_status_after_the_restart(service_factory, llm, kotlin,
                                                                                 data_root: Path) -> None:
    """kill -9 right after the dispatch's 200: the run record is written before the 200, so the
    restarted pod finds the run and continues it from what was checkpointed: Kotlin hears of it
    once, and /status knows it."""
    rel = f"clients/c1/{new_task_id()}"
    make_git_repo(data_root / rel)
    llm.script(*code_task_script())
    pod = service_factory(pod_id="orchestrator-0").start()
    with pod.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body(workspace_path=rel)).json()["thread_id"]
    pod.kill()

    restarted = service_factory(env=pod.env).start()
    ended = kotlin.wait_for_status(thread_id=thread_id, timeout=30)
    with restarted.client() as client:
        status = client.get(f"/status/{thread_id}").json()
    assert ended["status"] == "interrupted" and ended["interruptAction"] == "commit"
    assert status["status"] == "interrupted"
    assert len([s for s in kotlin.statuses if s["threadId"] == thread_id]) == 1


def test_a_run_killed_before_its_first_checkpoint_is_started_again_from_its_request(
        service_factory, llm, kotlin, mongo_server) -> None:
    """kill -9 right after the 200 and before the first checkpoint: nothing happened yet and the
    request is stored with the run, so the restarted pod starts it again (once) and it ends done,
    with one status push. Where the kill lands is a race; the checkpoints the thread got before it
    are deleted, which leaves exactly what a kill a few milliseconds earlier leaves."""
    held = threading.Event()  # the first pod's run cannot end before the kill: its intake call waits
    intake, respond = advice_script("Jervis answers after a restart.")
    llm.script(replace(intake, hold=held), respond)
    pod = service_factory(pod_id="orchestrator-0").start()
    body = orchestrate_body(query="What does Jervis do?")
    try:
        with pod.client() as client:
            thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
        pod.kill()
    finally:
        held.set()
    with MongoClient(mongo_server.url) as mongo:
        store = mongo[pod.env["CHECKPOINT_DATABASE"]]
        for name in ("checkpoints", "checkpoint_writes"):
            store[name].delete_many({"thread_id": thread_id})
        record = mongo[pod.env["MONGODB_DATABASE"]]["orchestrator_runs"].find_one({"_id": thread_id})
    assert record is not None and record["status"] == "running" and record["pending"]["query"] == body["query"]

    restarted = service_factory(env=pod.env).start()
    done = kotlin.wait_for_status(thread_id=thread_id, timeout=30)
    with restarted.client() as client:
        status = client.get(f"/status/{thread_id}").json()
    assert done["status"] == "done" and "Jervis answers after a restart." in done["summary"]
    assert status["status"] == "done"
    assert len([s for s in kotlin.statuses if s["threadId"] == thread_id]) == 1
    with MongoClient(mongo_server.url) as mongo:
        record = mongo[pod.env["MONGODB_DATABASE"]]["orchestrator_runs"].find_one({"_id": thread_id})
    assert record is not None and record["restarts"] == 1 and record.get("pending") is None
