"""Tiers, escalation, budgets and provider health end to end (spec §8): the scripted server
plays Ollama, OpenAI and Anthropic; the service runs as a real process."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.fixtures.llm_server import Reply
from tests.support import (
    advice_script,
    approval,
    classification,
    free_port,
    kotlin_rules,
    node_marker,
    orchestrate_body,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def cloud_service(service_factory: Any, llm_server: Any, kotlin_server: Any) -> Any:
    """Anthropic and OpenAI keys, both endpoints on the scripted server; Gemini without a key."""
    proc = service_factory(anthropic_api_key="test-key", anthropic_api_base=llm_server.url,
                           openai_api_key="test-key", openai_api_base=kotlin_server.url + "/v1").start()
    return proc


def failing_local_intake(answer: str = "Odpověď z cloudu") -> list[Reply]:
    """Ollama answers 500 to intake (every retry); the same prompts succeed on /v1/messages."""
    return [
        Reply(match=node_marker("intake"), status=500, error_body="model crashed", times=3, name="local-intake"),
        Reply(match=node_marker("intake"), content=classification(), name="cloud-intake"),
        Reply(match=node_marker("respond"), content=answer, name="respond"),
    ]


def paths(llm: Any, rule: str) -> list[str]:
    return [r.path for r in llm.requests if r.matched == rule]


def test_failed_local_call_escalates_to_an_allowed_cloud_provider(cloud_service, llm, kotlin) -> None:
    llm.script(*failing_local_intake())
    with cloud_service.client() as client:
        body = orchestrate_body(rules=kotlin_rules(auto_use_anthropic=True))
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
        done = kotlin.wait_for_status(thread_id=thread_id, status="done")
        status = client.get(f"/status/{thread_id}").json()

    assert done["summary"] == "Odpověď z cloudu"
    assert paths(llm, "local-intake") == ["/api/chat"] * 3  # retried, then escalated
    assert paths(llm, "cloud-intake") == ["/v1/messages"]
    assert float(status["llm_cost_usd"]) > 0  # the cloud call was priced from litellm's map


def test_users_cloud_request_counts_as_permission(cloud_service, llm, kotlin) -> None:
    llm.script(*failing_local_intake())
    with cloud_service.client() as client:
        body = orchestrate_body(query="Použij cloud a shrň mi projekt")
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    assert kotlin.wait_for_status(thread_id=thread_id, status="done")["summary"] == "Odpověď z cloudu"


@pytest.mark.parametrize(("approved", "reason"), [(True, "ano, použij cloud"), (False, "ne")])
def test_without_permission_the_user_is_asked_before_cloud(cloud_service, llm, kotlin, approved, reason) -> None:
    llm.script(*failing_local_intake())
    with cloud_service.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body()).json()["thread_id"]
        asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
        interrupt = client.get(f"/status/{thread_id}").json()
        assert asked["interruptAction"] == "cloud_model"
        assert "anthropic/claude-sonnet-4-5" in asked["interruptDescription"] and "$" in asked["interruptDescription"]
        assert interrupt["interrupt_action"] == "cloud_model"
        client.post(f"/approve/{thread_id}", json=approval(approved, reason))
        if approved:
            assert kotlin.wait_for_status(thread_id=thread_id, status="done")["summary"] == "Odpověď z cloudu"
            assert paths(llm, "local-intake") == ["/api/chat"] * 3  # not retried locally after approval
        else:
            error = kotlin.wait_for_status(thread_id=thread_id, status="error")
            assert "cloudového modelu bylo zamítnuto" in error["error"]
            assert paths(llm, "cloud-intake") == []


def test_allowed_provider_without_key_fails_fast_naming_the_tier(service_factory, llm, kotlin) -> None:
    llm.script(*failing_local_intake())
    with service_factory().start().client() as client:  # no cloud keys at all
        body = orchestrate_body(rules=kotlin_rules(auto_use_gemini=True))
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    error = kotlin.wait_for_status(thread_id=thread_id, status="error")
    assert "cloud_large_context (gemini/gemini-2.5-pro): OFFLINE (no API key)" in error["error"]


def test_prompt_too_large_for_local_goes_straight_to_the_cloud(cloud_service, llm, kotlin) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification(), name="intake"),
               Reply(match=node_marker("respond"), content="Shrnutí logu", name="respond"))
    huge = "Analyzuj tento log: " + "chyba v modulu platby " * 12_000  # ~60k tokens
    with cloud_service.client() as client:
        body = orchestrate_body(query=huge, rules=kotlin_rules(auto_use_anthropic=True))
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    kotlin.wait_for_status(thread_id=thread_id, status="done", timeout=60)
    assert paths(llm, "intake") == ["/v1/messages"]  # no local attempt at all


def test_local_tier_is_sized_by_the_prompt(service: Any, llm, kotlin) -> None:
    llm.script(*advice_script())
    medium = "Vysvětli: " + "souvislosti projektu " * 3_000  # ~12k tokens: LOCAL_STANDARD
    with service.client() as client:
        small = client.post("/orchestrate/stream", json=orchestrate_body()).json()["thread_id"]
        kotlin.wait_for_status(thread_id=small, status="done")
        large = client.post("/orchestrate/stream", json=orchestrate_body(query=medium)).json()["thread_id"]
        kotlin.wait_for_status(thread_id=large, status="done")
    contexts = [r.body.get("options", {}).get("num_ctx") for r in llm.requests if r.matched == "intake"]
    assert contexts == [8192, 32768]


def test_budget_warns_then_stops_the_run_with_a_clear_error(service: Any, llm, kotlin) -> None:
    llm.script(*advice_script())
    with service.client() as client:
        body = orchestrate_body(budget={"max_tokens": 10})
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
        error = kotlin.wait_for_status(thread_id=thread_id, status="error")
        with client.stream("GET", f"/stream/{thread_id}") as response:
            events = "".join(response.iter_text())
        status = client.get(f"/status/{thread_id}").json()

    assert "Rozpočet orchestrace vyčerpán (tokeny): " in error["error"] and " tokenů, " in error["error"]
    assert "event: budget_warning" in events
    assert any("Rozpočet" in p["message"] for p in kotlin.progress if p["taskId"] == body["task_id"])
    assert [r.matched for r in llm.requests] == ["intake"]  # stopped before the second call
    assert int(status["llm_tokens"]) > 10


def test_health_reports_every_tier_mode(cloud_service) -> None:
    tiers = httpx.get(f"{cloud_service.url}/health", timeout=10).json()["llm_tiers"]
    assert tiers["local_fast"]["mode"] == "ONLINE"
    assert tiers["cloud_reasoning"]["mode"] == "ONLINE"  # anthropic key, endpoint answers
    assert tiers["cloud_coding"]["mode"] == "API_ERROR"  # openai key, endpoint fails
    assert tiers["cloud_large_context"]["mode"] == "OFFLINE"  # no gemini key
    assert json.dumps(tiers).count("test-key") == 0  # keys never shown


def test_budget_can_ask_to_continue_instead_of_stopping(service_factory, llm, kotlin) -> None:
    llm.script(*advice_script("Pokračováno"))
    with service_factory(budget_on_exceeded="ask").start().client() as client:
        thread_id = client.post("/orchestrate/stream",
                                json=orchestrate_body(budget={"max_tokens": 10})).json()["thread_id"]
        asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
        assert asked["interruptAction"] == "budget" and "Rozpočet orchestrace vyčerpán" in asked["interruptDescription"]
        client.post(f"/approve/{thread_id}", json=approval(True, "ano, pokračuj"))
        assert kotlin.wait_for_status(thread_id=thread_id, status="done")["summary"] == "Pokračováno"


def test_a_task_sent_while_the_local_model_is_offline_ends_at_once_saying_so(service_factory, llm, kotlin) -> None:
    """No model server answers and the rules allow no cloud: the run is accepted (Kotlin's flow
    waits for a status) and ends at once with an error that says what to do, instead of failing
    at its first model call; with a cloud allowed, it starts."""
    offline = service_factory(ollama_url=f"http://127.0.0.1:{free_port()}", response_language="en").start()
    with offline.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body()).json()["thread_id"]
        error = kotlin.wait_for_status(thread_id=thread_id, status="error", timeout=15)
        assert error["error"].startswith("The task was not started: the local model ")
        assert "is offline (unreachable: ConnectError)" in error["error"]
        assert client.get(f"/status/{thread_id}").json()["status"] == "error"
        allowed = client.post("/orchestrate/stream", json=orchestrate_body(rules=kotlin_rules(auto_use_anthropic=True)))
        assert allowed.status_code == 200
        started = allowed.json()["thread_id"]
        kotlin.wait_for_progress(node="intake", task_id=started.split("-")[1], timeout=15)
    assert len([s for s in kotlin.statuses if s["threadId"] == thread_id]) == 1
