"""`/v1/messages` on a real service process with `API_TOKEN` set: only the key the local runner
hands to agents (derived from the token) or the token opens it, the agents' key opens nothing
else, and a streamed request comes back as Anthropic's events from the local model (the scripted
LLM's OpenAI endpoint as the embedded model). The translation itself: tests/unit/llm/test_local_messages.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.llm.anthropic_messages import agent_key
from tests.fixtures.llm_server import Reply, ScriptedLlmServer
from tests.fixtures.service import ServiceProcess, service_env

TOKEN = "orchestrator-api-token-messages-0123"
REQUEST = {"model": "claude-sonnet-4-5", "max_tokens": 1000, "stream": True,
           "messages": [{"role": "user", "content": "Create hello.txt"}],
           "tools": [{"name": "Write", "description": "Write a file", "input_schema": {
               "type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}}}}]}


@pytest.fixture(scope="module")
def guarded(mongo_server: Any, llm_server: ScriptedLlmServer, kotlin_server: Any, kb_server: Any, data_root: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    env = service_env(mongo_url=mongo_server.url, llm_url=llm_server.url, kotlin_url=kotlin_server.url,
                      kb_url=kb_server.url, data_root=data_root, api_token=TOKEN,
                      local_llm_api_base=f"{llm_server.url}/v1", local_llm_model="openai/test-model")
    proc = ServiceProcess(env=env, log_path=tmp_path_factory.mktemp("svc") / "service-messages.log").start()
    yield proc
    proc.stop()


def test_only_the_agents_key_or_the_token_opens_the_messages_routes(guarded: ServiceProcess,
                                                                    llm: ScriptedLlmServer) -> None:
    key = agent_key(TOKEN)
    with guarded.client() as http:
        for headers in ({}, {"x-api-key": "wrong"}, {"x-api-key": TOKEN}, {"Authorization": "Bearer wrong"},
                        {"x-api-key": agent_key("another-token")}):
            assert http.post("/v1/messages", json=REQUEST, headers=headers).status_code == 401, headers
            assert http.post("/v1/messages/count_tokens", json=REQUEST, headers=headers).status_code == 401
        counted = http.post("/v1/messages/count_tokens", json=REQUEST, headers={"x-api-key": key})
        assert counted.status_code == 200 and counted.json()["input_tokens"] > 0
        by_bearer = http.post("/v1/messages/count_tokens", json=REQUEST, headers={"Authorization": f"Bearer {key}"})
        assert by_bearer.status_code == 200
        by_token = http.post("/v1/messages/count_tokens", json=REQUEST, headers={"Authorization": f"Bearer {TOKEN}"})
        assert by_token.status_code == 200
        # the agents' key is good for these routes only
        for headers in ({"x-api-key": key}, {"Authorization": f"Bearer {key}"}):
            assert http.get("/runs", headers=headers).status_code == 401
            assert http.get("/health", headers=headers).json() == {"status": "ok", "busy": False}
    assert llm.requests == []  # nothing refused reached the model


def test_a_streamed_request_is_answered_by_the_local_model_as_anthropic_events(guarded: ServiceProcess,
                                                                               llm: ScriptedLlmServer) -> None:
    write = {"name": "Write", "input": {"file_path": "/w/hello.txt", "content": "hi\n"}}
    llm.script(Reply("Create hello.txt", "", tool_use=write, name="write"))
    with guarded.client() as http, http.stream("POST", "/v1/messages?beta=true", json=REQUEST,
                                               headers={"x-api-key": agent_key(TOKEN)}) as reply:
        assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
        raw = b"".join(reply.iter_bytes()).decode()
    events = [(block.split("\n")[0].removeprefix("event: "), json.loads(block.split("\n")[1][len("data: "):]))
              for block in raw.strip().split("\n\n")]
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    [use] = [data["content_block"] for name, data in events if name == "content_block_start"]
    assert (use["type"], use["name"]) == ("tool_use", "Write")
    [delta] = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert json.loads(delta["partial_json"]) == write["input"]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    (request,) = llm.requests
    assert request.path == "/v1/chat/completions" and request.model == "test-model" and request.stream


def test_a_bad_request_is_an_anthropic_error(guarded: ServiceProcess, llm: ScriptedLlmServer) -> None:
    with guarded.client() as http:
        reply = http.post("/v1/messages", content=b"{not json", headers={"x-api-key": agent_key(TOKEN),
                                                                          "content-type": "application/json"})
    assert reply.status_code == 400 and reply.json()["type"] == "error"
    assert reply.json()["error"]["type"] == "invalid_request_error" and llm.requests == []
