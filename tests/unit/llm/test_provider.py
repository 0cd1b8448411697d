"""LitellmProvider (app/llm/provider.py) through real litellm against the scripted LLM server."""

from __future__ import annotations

import json
import time

import pytest
from pydantic import BaseModel

from app.config import Settings
from app.llm.provider import HeartbeatTimeoutError, LitellmProvider, LlmError
from tests.fixtures.llm_server import Reply, ScriptedLlmServer
from tests.support import free_port

MESSAGES = [{"role": "system", "content": "### JERVIS NODE: test\nYou are Jervis."},
            {"role": "user", "content": "Classify this."}]


class Answer(BaseModel):
    category: str
    confidence: float = 0.0


def plain(messages: list[dict]) -> list[dict[str, str]]:
    """Role and content only (litellm adds Ollama keys such as `images`)."""
    return [{"role": m["role"], "content": m["content"]} for m in messages]


@pytest.fixture
def provider(llm: ScriptedLlmServer) -> LitellmProvider:
    return LitellmProvider(Settings(ollama_url=llm.url, local_model="test-model", heartbeat_dead_seconds=1,
                                    llm_retry_base_delay=0.01))


async def test_complete_returns_the_streamed_text(provider: LitellmProvider, llm: ScriptedLlmServer) -> None:
    text = "Jervis umí odpovídat na otázky – žluťoučký kůň."
    llm.script(Reply(match="Classify this", content=text, chunk_size=3))
    assert await provider.complete(MESSAGES) == text
    [request] = llm.requests
    assert (request.path, request.model, request.stream) == ("/api/chat", "test-model", True)
    assert plain(request.messages) == MESSAGES


async def test_complete_json_parses_fenced_json(provider: LitellmProvider, llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content='Here you go:\n```json\n{"category": "advice", "confidence": 0.9}\n```'))
    answer = await provider.complete_json(MESSAGES, Answer)
    assert answer == Answer(category="advice", confidence=0.9)
    assert len(llm.requests) == 1
    assert llm.requests[0].body.get("format") == "json"  # json_mode reaches Ollama


async def test_complete_json_repairs_once_with_the_parse_error(provider: LitellmProvider,
                                                               llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content="I think it is advice.", times=1, name="garbage"),
               Reply(content='{"category": "advice"}', name="valid"))
    answer = await provider.complete_json(MESSAGES, Answer)
    assert answer.category == "advice"
    first, repair = llm.requests
    assert [first.matched, repair.matched] == ["garbage", "valid"]
    assert plain(repair.messages[:2]) == MESSAGES
    assert plain(repair.messages[2:3]) == [{"role": "assistant", "content": "I think it is advice."}]
    assert "not valid JSON" in repair.last_user and "no JSON object in model output" in repair.last_user


async def test_complete_json_repairs_when_json_does_not_fit_the_schema(provider: LitellmProvider,
                                                                       llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content='{"confidence": 1}', times=1), Reply(content='{"category": "epic"}'))
    assert (await provider.complete_json(MESSAGES, Answer)).category == "epic"
    assert "category" in llm.requests[1].last_user and "Field required" in llm.requests[1].last_user


async def test_complete_json_raises_llm_error_when_invalid_twice(provider: LitellmProvider,
                                                                 llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content="still not json"))
    with pytest.raises(LlmError, match="invalid JSON twice"):
        await provider.complete_json(MESSAGES, Answer)
    assert len(llm.requests) == 2


async def test_complete_raises_heartbeat_timeout_when_stream_stalls(provider: LitellmProvider,
                                                                    llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content=json.dumps({"category": "advice"}), chunk_size=4, stall_after_chunks=1,
                     stall_seconds=30))
    started = time.monotonic()
    with pytest.raises(HeartbeatTimeoutError, match="no token for 1 s"):
        await provider.complete(MESSAGES)
    elapsed = time.monotonic() - started
    assert 0.9 <= elapsed <= 2.5, elapsed
    llm.wait_for_in_flight(0, timeout=3)  # the abandoned stream was closed, the server let go of it


async def test_complete_raises_heartbeat_timeout_when_first_token_never_comes(provider: LitellmProvider,
                                                                              llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content="late", delay_before=30))
    started = time.monotonic()
    with pytest.raises(HeartbeatTimeoutError):
        await provider.complete(MESSAGES)
    assert time.monotonic() - started <= 2.5
    llm.wait_for_in_flight(0, timeout=3)


def test_heartbeat_timeout_is_an_llm_error_and_a_timeout() -> None:
    assert issubclass(HeartbeatTimeoutError, LlmError) and issubclass(HeartbeatTimeoutError, TimeoutError)


async def test_complete_raises_llm_error_when_server_answers_500(provider: LitellmProvider,
                                                                 llm: ScriptedLlmServer) -> None:
    llm.script(Reply(status=500, error_body='{"error": "model crashed"}'))
    with pytest.raises(LlmError) as raised:
        await provider.complete(MESSAGES)
    assert not isinstance(raised.value, HeartbeatTimeoutError)


async def test_complete_raises_llm_error_when_server_is_down() -> None:
    provider = LitellmProvider(Settings(ollama_url=f"http://127.0.0.1:{free_port()}", local_model="test-model",
                                        heartbeat_dead_seconds=5, llm_retry_base_delay=0.01))
    started = time.monotonic()
    with pytest.raises(LlmError) as raised:
        await provider.complete(MESSAGES)
    assert not isinstance(raised.value, HeartbeatTimeoutError)
    assert time.monotonic() - started < 5
