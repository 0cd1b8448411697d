"""LitellmProvider (app/llm/provider.py) through real litellm against the scripted LLM server."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from pydantic import BaseModel

from app.config import Settings
from app.llm.health import ProviderHealth
from app.llm.provider import HeartbeatTimeoutError, LitellmProvider, LlmError, LlmOverflowError
from app.llm.tiers import Tier
from tests.fixtures.llm_server import Reply, ScriptedLlmServer
from tests.support import free_port, wait_until

#: An output cap that no scripted answer here reaches.
CAP = 500
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
    assert await provider.complete(MESSAGES, max_tokens=CAP) == text
    [request] = llm.requests
    assert (request.path, request.model, request.stream) == ("/api/chat", "test-model", True)
    assert plain(request.messages) == MESSAGES


async def test_complete_json_parses_fenced_json(provider: LitellmProvider, llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content='Here you go:\n```json\n{"category": "advice", "confidence": 0.9}\n```'))
    answer = await provider.complete_json(MESSAGES, Answer, max_tokens=CAP)
    assert answer == Answer(category="advice", confidence=0.9)
    assert len(llm.requests) == 1
    assert llm.requests[0].body.get("format") == "json"  # json_mode reaches Ollama


async def test_complete_json_repairs_once_with_the_parse_error(provider: LitellmProvider,
                                                               llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content="I think it is advice.", times=1, name="garbage"),
               Reply(content='{"category": "advice"}', name="valid"))
    answer = await provider.complete_json(MESSAGES, Answer, max_tokens=CAP)
    assert answer.category == "advice"
    first, repair = llm.requests
    assert [first.matched, repair.matched] == ["garbage", "valid"]
    assert plain(repair.messages[:2]) == MESSAGES
    assert plain(repair.messages[2:3]) == [{"role": "assistant", "content": "I think it is advice."}]
    assert "not valid JSON" in repair.last_user and "no JSON object in model output" in repair.last_user


async def test_complete_json_repairs_when_json_does_not_fit_the_schema(provider: LitellmProvider,
                                                                       llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content='{"confidence": 1}', times=1), Reply(content='{"category": "epic"}'))
    assert (await provider.complete_json(MESSAGES, Answer, max_tokens=CAP)).category == "epic"
    assert "category" in llm.requests[1].last_user and "Field required" in llm.requests[1].last_user


async def test_complete_json_raises_llm_error_when_invalid_twice(provider: LitellmProvider,
                                                                 llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content="still not json"))
    with pytest.raises(LlmError, match="invalid JSON twice"):
        await provider.complete_json(MESSAGES, Answer, max_tokens=CAP)
    assert len(llm.requests) == 2


async def test_complete_raises_heartbeat_timeout_when_stream_stalls(provider: LitellmProvider,
                                                                    llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content=json.dumps({"category": "advice"}), chunk_size=4, stall_after_chunks=1,
                     stall_seconds=30))
    started = time.monotonic()
    with pytest.raises(HeartbeatTimeoutError, match="no token for 1 s"):
        await provider.complete(MESSAGES, max_tokens=CAP)
    elapsed = time.monotonic() - started
    assert 0.9 <= elapsed <= 2.5, elapsed
    llm.wait_for_in_flight(0, timeout=3)  # the abandoned stream was closed, the server let go of it


async def test_complete_raises_heartbeat_timeout_when_first_token_never_comes(provider: LitellmProvider,
                                                                              llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content="late", delay_before=30))
    started = time.monotonic()
    with pytest.raises(HeartbeatTimeoutError):
        await provider.complete(MESSAGES, max_tokens=CAP)
    assert time.monotonic() - started <= 2.5
    llm.wait_for_in_flight(0, timeout=3)


def test_heartbeat_timeout_is_an_llm_error_and_a_timeout() -> None:
    assert issubclass(HeartbeatTimeoutError, LlmError) and issubclass(HeartbeatTimeoutError, TimeoutError)


async def test_complete_raises_llm_error_when_server_answers_500(provider: LitellmProvider,
                                                                 llm: ScriptedLlmServer) -> None:
    llm.script(Reply(status=500, error_body='{"error": "model crashed"}'))
    with pytest.raises(LlmError) as raised:
        await provider.complete(MESSAGES, max_tokens=CAP)
    assert not isinstance(raised.value, HeartbeatTimeoutError)


async def test_complete_raises_llm_error_when_server_is_down() -> None:
    provider = LitellmProvider(Settings(ollama_url=f"http://127.0.0.1:{free_port()}", local_model="test-model",
                                        heartbeat_dead_seconds=5, llm_retry_base_delay=0.01))
    started = time.monotonic()
    with pytest.raises(LlmError) as raised:
        await provider.complete(MESSAGES, max_tokens=CAP)
    assert not isinstance(raised.value, HeartbeatTimeoutError)
    assert time.monotonic() - started < 5


# ------------------------------------------------------------------- bounded calls
STEPS_LOOP = '{"steps": [{"instructions": "' + "Add the subtract function to calc.py. " * 120


class Steps(BaseModel):
    steps: list[dict[str, str]]


async def test_a_json_answer_that_repeats_itself_is_cut_and_asked_for_again_shorter(
        provider: LitellmProvider, llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content=STEPS_LOOP, chunk_size=16, chunk_delay=0.01, times=1, name="loop"),
               Reply(content='{"steps": [{"instructions": "Add subtract(a, b) to calc.py."}]}', name="short"))
    started = time.monotonic()

    answer = await provider.complete_json(MESSAGES, Steps, max_tokens=CAP)

    assert answer.steps == [{"instructions": "Add subtract(a, b) to calc.py."}]
    loop, retry = llm.requests
    assert time.monotonic() - started < 2.0  # the loop streams for ~3 s: cut after a few repeats
    assert loop.streamed_to_end is False  # the connection was closed: a real server stops generating
    assert "repeated itself" in retry.last_user and "much shorter" in retry.last_user
    assert "Add the subtract function to calc.py. Add the subtract" not in retry.text  # never echoed back


async def test_a_json_answer_at_its_cap_is_asked_for_once_more_then_given_up(
        provider: LitellmProvider, llm: ScriptedLlmServer) -> None:
    words = " ".join(f"item{n}" for n in range(400))
    llm.script(Reply(content='{"steps": [{"instructions": "' + words + '"}]}'))

    with pytest.raises(LlmOverflowError, match="cap of 50 output tokens") as raised:
        await provider.complete_json(MESSAGES, Steps, max_tokens=50)

    assert raised.value.reason == "length"
    assert [r.body["options"]["num_predict"] for r in llm.requests] == [50, 50]  # the cap reaches the server


async def test_a_text_answer_that_repeats_itself_is_returned_without_the_loop(
        provider: LitellmProvider, llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content="Sčítá dvě čísla. " + "A pak znovu. " * 200, chunk_size=13))
    assert await provider.complete(MESSAGES, max_tokens=CAP) == "Sčítá dvě čísla. A pak znovu …"


async def test_the_repair_round_shows_only_the_start_of_an_unusable_answer(
        provider: LitellmProvider, llm: ScriptedLlmServer) -> None:
    garbage = " ".join(f"token{n}" for n in range(600))  # ~4,400 characters, not JSON, not a loop
    llm.script(Reply(content=garbage, times=1), Reply(content='{"category": "advice"}'))

    assert (await provider.complete_json(MESSAGES, Answer, max_tokens=2000)).category == "advice"

    echoed = llm.requests[1].messages[2]["content"]
    assert echoed.startswith("token0 token1") and echoed.endswith("…[cut]") and len(echoed) < 820


async def test_a_cancelled_call_closes_its_stream(provider: LitellmProvider, llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content=" ".join(f"w{n}" for n in range(500)), chunk_size=4, chunk_delay=0.02))
    call = asyncio.create_task(provider.complete(MESSAGES, max_tokens=CAP))
    [request] = await asyncio.to_thread(llm.wait_for_requests, 1)
    await asyncio.sleep(0.3)

    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call

    await asyncio.to_thread(wait_until, lambda: request.streamed_to_end is False, 5, "the server to see the close")


async def test_generation_speed_is_measured_per_model_and_shown_by_health(provider: LitellmProvider,
                                                                          llm: ScriptedLlmServer) -> None:
    llm.script(Reply(content=" ".join(f"w{n}" for n in range(120)), chunk_size=8, chunk_delay=0.01))
    async with httpx.AsyncClient() as http:
        health = ProviderHealth(provider, http, cache_seconds=60)
        assert (await health.report())["local_fast"]["tokens_per_second"] is None

        await provider.complete(MESSAGES, max_tokens=CAP)

        speed = provider.tokens_per_second["ollama_chat/test-model"]
        assert speed > 10
        report = await health.report()  # the cached report shows the new figure too
    assert report["local_fast"]["tokens_per_second"] == round(speed, 1)
    assert report["cloud_reasoning"]["tokens_per_second"] is None


async def test_one_tiers_state_probes_only_its_own_endpoint(llm: ScriptedLlmServer) -> None:
    """A dispatch asks whether the local model is up; it must not wait for a cloud provider. The
    cloud endpoint here accepts connections and never answers: only the full report goes there."""
    accepted: list[object] = []
    server = await asyncio.start_server(lambda reader, writer: accepted.append(writer), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    provider = LitellmProvider(Settings(ollama_url=llm.url, local_model="test-model", anthropic_api_key="k",
                                        anthropic_api_base=f"http://127.0.0.1:{port}"))
    async with server, httpx.AsyncClient() as http:
        health = ProviderHealth(provider, http, cache_seconds=60, timeout=0.5)
        local = await health.tier(Tier.LOCAL_FAST)
        assert local["mode"] == "ONLINE" and local["model"] == "ollama_chat/test-model"
        assert accepted == []
        report = await health.report()
        assert len(accepted) == 1 and report["cloud_reasoning"]["mode"] == "OFFLINE"
        assert report["local_fast"]["mode"] == "ONLINE"
