"""End-to-end orchestrations: the service process, nx-27017, the scripted LLM, fake Kotlin and KB."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.llm_server import Reply
from tests.support import (
    advice_script,
    approval,
    classification,
    code_task_script,
    git,
    kotlin_rules,
    make_git_repo,
    new_task_id,
    node_marker,
    orchestrate_body,
    sse_events,
    wait_until,
)

PROGRESS_NODES = {"intake", "evidence_pack", "respond", "plan", "select_goal", "plan_steps", "execute_step",
                  "evaluate", "advance_step", "advance_goal", "git_operations", "finalize", "plan_epic", "design",
                  "clarify", "approve_plan"}


def start(client: httpx.Client, body: dict[str, Any]) -> str:
    response = client.post("/orchestrate/stream", json=body)
    assert response.status_code == 200, response.text
    reply = response.json()
    assert reply["stream_url"] == f"/stream/{reply['thread_id']}"
    assert reply["thread_id"].startswith(f"thread-{body['task_id']}-")
    return reply["thread_id"]


def assert_string_status(body: dict[str, Any]) -> None:
    assert all(isinstance(v, str) for v in body.values()), body


@pytest.fixture
def client(service: Any) -> httpx.Client:
    with service.client() as http:
        yield http


@pytest.fixture
def workspace(data_root: Path) -> tuple[str, Path]:
    rel = f"clients/c1/{new_task_id()}"
    return rel, make_git_repo(data_root / rel)


def test_advice_question_is_answered_and_reported_done(client, llm, kotlin, kb) -> None:
    llm.script(*advice_script("Jervis umí odpovídat na otázky."))
    body = orchestrate_body(query="Co umíš?")
    thread_id = start(client, body)

    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert done["summary"] == "Jervis umí odpovídat na otázky."
    assert done["artifacts"] == [] and done["taskId"] == body["task_id"]
    nodes = [p["node"] for p in kotlin.progress if p["taskId"] == body["task_id"]]
    assert nodes == ["intake", "evidence_pack", "respond", "finalize"]
    assert kotlin.violations == [] and kotlin.semantic_violations == []
    status = client.get(f"/status/{thread_id}").json()
    assert_string_status(status)
    assert status["status"] == "done" and status["summary"] == done["summary"]


def test_code_task_runs_agent_asks_for_commit_and_commits_on_approval(client, llm, kotlin, workspace, service) -> None:
    rel, repo = workspace
    llm.script(*code_task_script())
    body = orchestrate_body(workspace_path=rel)
    thread_id = start(client, body)

    asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
    assert asked["interruptAction"] == "commit"
    assert "task/" in asked["interruptDescription"]
    assert (repo / "app/health.py").exists() and not (repo / ".jervis").exists()
    status = client.get(f"/status/{thread_id}").json()
    assert_string_status(status)
    assert status["interrupt_action"] == "commit"

    assert client.post(f"/approve/{thread_id}", json=approval(True, "ano, commitni to")).json() == {
        "status": "resuming", "thread_id": thread_id}
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    branch = f"task/{body['task_id']}"
    assert done["branch"] == branch and done["artifacts"] == ["app/health.py"]
    # REPORT_WRITER=facts (the default): the report is the run's facts, in the request's language
    assert "Dokončeno 1 z 1 kroků. Změněné soubory: app/health.py." in done["summary"]
    assert f"Změny jsou commitnuté ve větvi {branch}." in done["summary"]
    log = git(repo, "log", "--format=%s", branch)
    assert log.splitlines()[0].startswith(f"task({body['task_id']}):")
    assert git(repo, "show", "--name-only", "--format=", branch).split() == ["app/health.py"]
    nodes = [p["node"] for p in kotlin.progress if p["taskId"] == body["task_id"]]
    # a single task: its steps planned by `plan` in one call, no goal selection
    assert nodes == ["intake", "evidence_pack", "plan", "execute_step", "evaluate", "git_operations", "git_operations",
                     "finalize"]
    step_push = next(p for p in kotlin.progress if p["taskId"] == body["task_id"] and p["node"] == "execute_step")
    assert step_push["totalGoals"] == 1 and step_push["totalSteps"] == 1
    # the planned type, and what runs it: a Job of its image, or the local runner's program (the test command)
    assert step_push["message"].endswith(" (aider)" if service.runner == "kubernetes" else " (aider → command)")
    assert kotlin.violations == []
    status = client.get(f"/status/{thread_id}").json()
    assert_string_status(status)
    usage = {key: status.pop(key) for key in ("llm_tokens", "llm_cost_usd", "llm_seconds", "llm_calls", "time_by_node")}
    assert status == {"status": "done", "thread_id": thread_id, "summary": done["summary"], "branch": branch,
                      "artifacts": "app/health.py", "percent": "100"}
    assert int(usage["llm_tokens"]) > 0 and float(usage["llm_cost_usd"]) == 0.0  # local tier: free
    assert usage["llm_calls"] == "2"  # the model classified and planned (this request names no file)
    assert usage["time_by_node"].startswith("intake ") and " s (1 call, " in usage["time_by_node"]
    with client.stream("GET", f"/stream/{thread_id}") as response:
        stream = "".join(response.iter_text())
    assert "event: agent_log" in stream and "wrote app/health.py" in stream  # the agent's own output, live


@pytest.mark.parametrize(("approved", "reason"), [(False, "ne"), (True, "neschvaluji")])
def test_rejected_commit_ends_cleanly_without_commit(client, llm, kotlin, workspace, approved, reason) -> None:
    rel, repo = workspace
    llm.script(*code_task_script())
    thread_id = start(client, orchestrate_body(workspace_path=rel))
    kotlin.wait_for_status(thread_id=thread_id, status="interrupted")

    client.post(f"/approve/{thread_id}", json=approval(approved, reason))
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert done["branch"] is None
    assert "zamítnut" in done["summary"]
    assert git(repo, "branch", "--list", "task/*").strip() == ""
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"


def test_unclear_goal_asks_and_continues_with_the_answer(client, llm, kotlin) -> None:
    def classify(request: Any) -> str:
        if "Moje odpověď: projekt Webshop" in request.text:
            return classification("advice")
        return classification(goal_clear=False, questions=["Který projekt?"])

    llm.script(
        Reply(match=node_marker("intake"), content=classify, name="intake"),
        Reply(match=node_marker("respond"), content="Odpověď pro Webshop"),
    )
    thread_id = start(client, orchestrate_body(query="Oprav to"))

    asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
    assert asked["interruptAction"] == "clarify" and "Který projekt?" in asked["interruptDescription"]
    client.post(f"/approve/{thread_id}", json=approval(True, "Moje odpověď: projekt Webshop"))

    done = kotlin.wait_for_status(thread_id=thread_id, status="done")
    assert done["summary"] == "Odpověď pro Webshop"
    intakes = [r.text for r in llm.requests if r.matched == "intake"]
    assert len(intakes) == 2 and "Moje odpověď" not in intakes[0] and "Moje odpověď" in intakes[1]


def test_cancel_mid_run_stops_the_agent_and_pushes_error(client, llm, kotlin, workspace) -> None:
    rel, repo = workspace
    llm.script(*code_task_script(files={"late.txt": "never"}, extra_instructions="@@SLEEP 30"))
    body = orchestrate_body(workspace_path=rel)
    thread_id = start(client, body)
    kotlin.wait_for_progress(node="execute_step", task_id=body["task_id"])

    assert client.post(f"/cancel/{thread_id}", headers={"Content-Type": "application/json"}).json() == {
        "status": "cancelled"}

    error = kotlin.wait_for_status(thread_id=thread_id, status="error", timeout=10)
    assert error["error"] == "Orchestrace zrušena uživatelem" and error["artifacts"] == []
    assert not (repo / "late.txt").exists()
    status = client.get(f"/status/{thread_id}").json()
    assert status["status"] == "error" and status["error"] == "Orchestrace zrušena uživatelem"
    assert client.post(f"/cancel/{thread_id}").status_code == 404


def test_second_orchestration_gets_429_while_one_runs(client, llm, kotlin) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification(), delay_before=30), *advice_script())
    first = start(client, orchestrate_body())
    kotlin.wait_for_progress(node="intake")

    busy = client.post("/orchestrate/stream", json=orchestrate_body())
    assert busy.status_code == 429 and "busy" in busy.json()["detail"]
    assert client.get("/health").json()["busy"] is True
    client.post(f"/cancel/{first}")
    kotlin.wait_for_status(thread_id=first, status="error")
    assert client.get("/health").json()["busy"] is False


def test_llm_stall_is_reported_as_error_after_the_heartbeat(client, llm, kotlin) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification(), stall_after_chunks=1, stall_seconds=60))
    thread_id = start(client, orchestrate_body())
    first_push = kotlin.wait_for_progress(node="intake")

    error = kotlin.wait_for_status(thread_id=thread_id, status="error", timeout=15)

    assert "heartbeat" in error["error"] and "2 s" in error["error"]
    pushes = {e.route: e for e in kotlin.events}
    assert first_push is not None and pushes
    status = client.get(f"/status/{thread_id}").json()
    assert_string_status(status)
    assert status["status"] == "error"


def test_kb_outage_does_not_stop_the_run(client, llm, kotlin, kb) -> None:
    kb.set_mode("down")
    llm.script(*advice_script("Odpověď bez KB"))
    thread_id = start(client, orchestrate_body())

    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert done["summary"] == "Odpověď bez KB"
    respond_prompt = next(r for r in llm.requests if r.matched == "respond").text
    assert "Knowledge Base unavailable" in respond_prompt


def test_forbidden_file_fails_the_step_is_retried_then_asked_about_and_undone(client, llm, kotlin,
                                                                             workspace) -> None:
    rel, repo = workspace
    llm.script(*code_task_script(files={"config/prod.env": "SECRET=1"}))  # no reflection scripted: fallback
    thread_id = start(client, orchestrate_body(workspace_path=rel))

    asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted")  # retried once, then asked
    assert asked["interruptAction"] == "clarify" and "config/prod.env" in asked["interruptDescription"]
    assert "přeskoč" in asked["interruptDescription"]  # the options, in the request's language
    client.post(f"/approve/{thread_id}", json=approval(True, "stop"))
    error = kotlin.wait_for_status(thread_id=thread_id, status="error")

    assert error["error"].startswith("Uživatel ukončil práci po selhání kroku 1 cíle 1: Změněny zakázané soubory: "
                                     "config/prod.env.")
    assert "Dokončeno 0 z 1 kroků" in error["error"]
    assert not (repo / "config/prod.env").exists()  # the forbidden write was undone, not only reported
    assert git(repo, "branch", "--list", "task/*").strip() == ""


def test_stream_replays_missed_events_after_reconnect(client, llm, kotlin, service) -> None:
    llm.script(*advice_script())
    thread_id = start(client, orchestrate_body())
    kotlin.wait_for_status(thread_id=thread_id, status="done")

    everything = sse_events(client, thread_id)
    assert everything[0][1] == "node_start" and everything[-1][1] == "done"
    assert [e[0] for e in everything] == list(range(1, len(everything) + 1))
    resumed = sse_events(client, thread_id, {"Last-Event-ID": str(everything[2][0])})
    assert resumed == everything[3:]
    assert client.get("/stream/thread-nope-00000000").status_code == 404


def test_tracker_step_calls_the_kotlin_tracker_and_reports_a_placeholder_as_not_created(client, llm, kotlin) -> None:
    llm.script(
        Reply(match=node_marker("intake"), content=classification("single_task", "tracker_ops")),
        Reply(match=node_marker("plan"), content=json.dumps({"steps": [{
            "instructions": "create the issue", "step_type": "tracker",
            "tracker_operations": [{"op": "create", "title": "Health endpoint", "description": "Add /health"}]}]})),
    )
    body = orchestrate_body(jervis_project_id="67a9b1c2d3e4f5a6b7c8d9ff")
    thread_id = start(client, body)

    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    # Kotlin's tracker is a placeholder (no issue key): the report says so.
    assert done["summary"].startswith("Hotovo: create the issue.")
    assert "Issue „Health endpoint“ nebylo založeno: tracker odpověděl bez klíče issue" in done["summary"]
    route, call = kotlin.tracker_calls[-1]
    assert route == "create-issue"
    assert call == {"clientId": body["client_id"], "projectId": "67a9b1c2d3e4f5a6b7c8d9ff",
                    "title": "Health endpoint", "description": "Add /health", "type": "task", "parentKey": None}
    [sent] = [e for e in kotlin.events if e.route.endswith("/create-issue")]
    assert (sent.idempotency_key or "").startswith(f"tracker:{thread_id}:g0:s0:r0:o0:")  # the run's, not the chat's


def test_status_of_unknown_thread_is_string_only(client) -> None:
    body = client.get("/status/thread-unknown-12345678").json()
    assert body == {"status": "unknown", "thread_id": "thread-unknown-12345678"}


def test_status_while_running_is_string_only(client, llm, kotlin) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification(), delay_before=30))
    thread_id = start(client, orchestrate_body())
    kotlin.wait_for_progress(node="intake")
    try:
        assert client.get(f"/status/{thread_id}").json() == {"status": "running", "thread_id": thread_id,
                                                             "percent": "2"}
    finally:
        client.post(f"/cancel/{thread_id}")
        kotlin.wait_for_status(thread_id=thread_id, status="error")


def test_health_reports_dependencies(client) -> None:
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["busy"] in (True, False)
    assert health["dependencies"]["mongodb"]["status"] == "ok"
    tiers = health["llm_tiers"]
    assert {tiers[t]["mode"] for t in ("local_fast", "local_standard", "local_large")} == {"ONLINE"}
    assert tiers["cloud_reasoning"] == {"mode": "OFFLINE", "model": "anthropic/claude-sonnet-4-5",
                                        "provider": "anthropic", "detail": "no API key for anthropic",
                                        "price": {"source": "litellm", "input_per_mtok": 3.0, "output_per_mtok": 15.0},
                                        "tokens_per_second": None}
    assert health["warnings"] == []
    assert health["dependencies"]["knowledgebase"]["status"] == "ok"


@pytest.mark.parametrize(("push_reason", "outcome"), [("ano, pushni", "pushed"), ("ne, nepushuj", "push_rejected")])
def test_auto_push_asks_again_before_pushing(client, llm, kotlin, workspace, tmp_path, push_reason, outcome) -> None:
    rel, repo = workspace
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(repo, "remote", "add", "origin", str(origin))
    llm.script(*code_task_script())
    body = orchestrate_body(workspace_path=rel, rules=kotlin_rules(auto_push=True))
    thread_id = start(client, body)
    branch = f"task/{body['task_id']}"

    kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
    client.post(f"/approve/{thread_id}", json=approval(True, "ano"))
    asked = wait_until(lambda: [s for s in kotlin.statuses
                                if s["threadId"] == thread_id and s.get("interruptAction") == "push"], what="push")
    assert branch in asked[0]["interruptDescription"]
    client.post(f"/approve/{thread_id}", json=approval(True, push_reason))
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert done["branch"] == branch
    assert git(repo, "rev-list", "--count", branch).strip() == "2"  # committed exactly once
    pushed = git(origin, "branch", "--list", branch).strip()
    if outcome == "pushed":
        assert pushed and "pushnuté" in done["summary"]
    else:
        assert not pushed and "Push byl zamítnut" in done["summary"]


def test_blocking_orchestrate_returns_the_result(client, llm, kotlin) -> None:
    llm.script(*advice_script("Blokující odpověď"))
    body = orchestrate_body()

    reply = client.post("/orchestrate", json=body).json()

    assert reply["success"] is True and reply["summary"] == "Blokující odpověď"
    assert reply["task_id"] == body["task_id"] and reply["thread_id"].startswith(f"thread-{body['task_id']}-")
    assert reply["branch"] is None and reply["artifacts"] == [] and reply["step_results"] == []


def test_blocking_orchestrate_reports_an_interrupt(client, llm, kotlin, workspace) -> None:
    rel, _ = workspace
    llm.script(*code_task_script())

    reply = client.post("/orchestrate", json=orchestrate_body(workspace_path=rel)).json()

    assert reply["status"] == "interrupted" and reply["interrupt"]["action"] == "commit"
    assert reply["interrupt"]["changed_files"] == ["app/health.py"]
    client.post(f"/cancel/{reply['thread_id']}")
    error = kotlin.wait_for_status(thread_id=reply["thread_id"], status="error")["error"]
    # Cancelled while waiting: the error also says what was done and that it is not committed.
    assert error == ("Orchestrace zrušena uživatelem. Dokončeno 1 z 1 kroků. Změněné soubory: app/health.py. "
                     "Hotová práce zůstala necommitnutá v pracovním adresáři.")


def test_approve_waits_its_turn_like_a_new_orchestration(client, llm, kotlin, workspace) -> None:
    rel, _ = workspace
    llm.script(*code_task_script())
    waiting = start(client, orchestrate_body(workspace_path=rel))
    kotlin.wait_for_status(thread_id=waiting, status="interrupted")
    llm.script(Reply(match=node_marker("intake"), content=classification(), delay_before=30))
    running = start(client, orchestrate_body())
    kotlin.wait_for_progress(node="intake")

    busy = client.post(f"/approve/{waiting}", json=approval(True, "ano"))

    assert busy.status_code == 429
    assert client.get(f"/status/{waiting}").json()["status"] == "interrupted"  # nothing lost
    client.post(f"/cancel/{running}")
    kotlin.wait_for_status(thread_id=running, status="error")
    llm.script(*code_task_script())
    assert client.post(f"/approve/{waiting}", json=approval(True, "ano")).status_code == 200
    assert kotlin.wait_for_status(thread_id=waiting, status="done")["branch"].startswith("task/")


def test_chat_history_reaches_the_prompts_as_each_node_needs_it(client, llm, kotlin) -> None:
    history = {
        "recent_messages": [
            {"role": "user", "content": f"zpráva {i}", "timestamp": "2026-02-13T09:15:30.123Z", "sequence": i}
            for i in range(1, 8)
        ],
        "summary_blocks": [{"sequence_range": "1-20", "summary": "Řešili jsme FastAPI.",
                            "key_decisions": ["použít FastAPI"], "topics": ["API"], "is_checkpoint": False,
                            "checkpoint_reason": None}],
        "total_message_count": 27,
    }
    llm.script(*advice_script("OK"))
    thread_id = start(client, orchestrate_body(chat_history=history))
    kotlin.wait_for_status(thread_id=thread_id, status="done")

    intake = next(r.text for r in llm.requests if r.matched == "intake")
    respond = next(r.text for r in llm.requests if r.matched == "respond")
    assert "zpráva 7" in intake and "zpráva 3" in intake and "zpráva 2" not in intake  # the last five
    assert "Řešili jsme FastAPI." in respond and "zpráva 1" in respond  # summaries + every recent message


def test_the_tokens_an_agent_reports_count_in_the_runs_usage(client, llm, kotlin, workspace) -> None:
    """Aider prints "Tokens: 2.6k sent, 271 received." after each model call: the entrypoint adds
    them up, and the run's budget and /status count them under execute_step."""
    rel, _ = workspace
    llm.script(*code_task_script(extra_instructions="@@SAY Tokens: 1.5k sent, 250 received.\n"
                                                     "@@SAY Tokens: 300 sent, 50 received. Cost: $0.00 message."))
    thread_id = start(client, orchestrate_body(workspace_path=rel))
    kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
    status = client.get(f"/status/{thread_id}").json()
    assert "execute_step " in status["time_by_node"] and " s (2100 tokens)" in status["time_by_node"]
    model_tokens = sum(r.prompt_tokens + r.completion_tokens for r in llm.requests if hasattr(r, "prompt_tokens"))
    assert int(status["llm_tokens"]) >= 2100 + model_tokens
