"""`POST /internal/compress-chat` (`docs/api.md`, chat compression) against the real service over HTTP."""

from __future__ import annotations

import json

import httpx

from tests.fixtures.llm_server import Reply, ScriptedLlmServer
from tests.support import node_marker

CLIENT_ID = "67a9b1c2d3e4f5a6b7c8d9e0"
TASK_ID = "67ad0f1e2b3c4d5e6f708192"
MARKER = node_marker("compress-chat")


def kotlin_body(previous_summary: str | None = None, **overrides: object) -> dict:
    """`CompressChatRequestDto` exactly as Kotlin encodes it (explicit null included)."""
    body = {
        "messages": [
            {"role": "user", "content": "Přidej endpoint /health do API, použij FastAPI.",
             "timestamp": "2026-02-13T08:00:00Z", "sequence": 1},
            {"role": "assistant", "content": "Hotovo: endpoint /health je v app/api.py.",
             "timestamp": "2026-02-13T08:00:09Z", "sequence": 2},
        ],
        "previous_summary": previous_summary, "client_id": CLIENT_ID, "task_id": TASK_ID,
    }
    return body | overrides


def test_compresses_messages_into_a_summary_block(api: httpx.Client, llm: ScriptedLlmServer) -> None:
    llm.script(Reply(match=MARKER, content=json.dumps({
        "summary": "Uživatel chtěl endpoint /health; je hotový v app/api.py.",
        "key_decisions": ["použít FastAPI"], "topics": ["API"], "is_checkpoint": True,
        "checkpoint_reason": "Úkol dokončen",
    }, ensure_ascii=False)))

    response = api.post("/internal/compress-chat",
                        json=kotlin_body(previous_summary="Dříve: uživatel založil projekt webshop."))

    assert response.status_code == 200, response.text
    assert response.json() == {"summary": "Uživatel chtěl endpoint /health; je hotový v app/api.py.",
                               "key_decisions": ["použít FastAPI"], "topics": ["API"], "is_checkpoint": True,
                               "checkpoint_reason": "Úkol dokončen"}
    [request] = llm.requests
    assert request.matched == "rule[0]"
    assert "Dříve: uživatel založil projekt webshop." in request.text  # previous summary in the prompt
    assert "[1] user (2026-02-13T08:00:00Z): Přidej endpoint /health do API" in request.text
    assert "[2] assistant" in request.text


def test_model_nulls_become_kotlin_safe_values(api: httpx.Client, llm: ScriptedLlmServer) -> None:
    llm.script(Reply(match=MARKER, content=json.dumps({
        "summary": "Shrnutí.", "key_decisions": None, "topics": None, "is_checkpoint": None,
        "checkpoint_reason": "ignored when not a checkpoint"})))

    response = api.post("/internal/compress-chat", json=kotlin_body())

    assert response.status_code == 200, response.text
    assert response.json() == {"summary": "Shrnutí.", "key_decisions": [], "topics": [], "is_checkpoint": False,
                               "checkpoint_reason": None}
    assert "Previous summary" not in llm.requests[0].text


def test_empty_message_list_answers_an_empty_summary_without_the_model(api: httpx.Client,
                                                                      llm: ScriptedLlmServer) -> None:
    response = api.post("/internal/compress-chat", json=kotlin_body(messages=[]))

    assert response.status_code == 200
    assert response.json() == {"summary": "", "key_decisions": [], "topics": [], "is_checkpoint": False,
                               "checkpoint_reason": None}
    assert llm.requests == []


def test_bad_bodies_are_readable_422s(api: httpx.Client, llm: ScriptedLlmServer) -> None:
    message = kotlin_body()["messages"][0]
    cases = [
        ({k: v for k, v in kotlin_body().items() if k != "messages"}, "messages"),
        (kotlin_body(messages=None), "messages"),
        (kotlin_body(messages=[{k: v for k, v in message.items() if k != "timestamp"}]), "messages.0.timestamp"),
        (kotlin_body(messages=[message | {"sequence": "first"}]), "messages.0.sequence"),
    ]
    for body, fragment in cases:
        response = api.post("/internal/compress-chat", json=body)
        assert response.status_code == 422, response.text
        assert fragment in response.json()["detail"]
    response = api.post("/internal/compress-chat", content=b"{nope", headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert llm.requests == []


def test_garbage_from_the_model_twice_is_a_502_with_a_clear_detail(api: httpx.Client,
                                                                    llm: ScriptedLlmServer) -> None:
    llm.script(Reply(match=MARKER, content="Promiňte, shrnutí nemám."))

    response = api.post("/internal/compress-chat", json=kotlin_body())

    assert response.status_code == 502
    detail = response.json()["detail"]
    assert "chat compression failed" in detail and "invalid JSON" in detail
    assert len(llm.requests) == 2  # the first answer plus one repair round


def test_model_server_error_is_a_502(api: httpx.Client, llm: ScriptedLlmServer) -> None:
    llm.script(Reply(match=MARKER, status=500, error_body='{"error": "model crashed"}'))

    response = api.post("/internal/compress-chat", json=kotlin_body())

    assert response.status_code == 502
    assert response.json()["detail"].startswith("chat compression failed")


def test_a_token_quoted_by_the_models_error_is_redacted_in_the_502(api: httpx.Client,
                                                                   llm: ScriptedLlmServer) -> None:
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123"
    llm.script(Reply(match=MARKER, status=500, error_body=f'{{"error": "mirror refused token {token}"}}'))

    response = api.post("/internal/compress-chat", json=kotlin_body())

    assert response.status_code == 502
    assert "mirror refused token ghp_***" in response.json()["detail"] and token not in response.text
