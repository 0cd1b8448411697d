"""Busy is not offline: a local model server that serves one request at a time (llama-cpp-python's,
imitated by the scripted LLM's single-slot mode) accepts every connection and answers only when its
generation ends. Health calls it BUSY, a call waits for its turn past the token heartbeat, and a
server that stops accepting connections while a call waits fails the call at once as offline."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from app.config import Settings
from app.llm.errors import HeartbeatTimeoutError, LlmError, QueueWaitTimeoutError
from app.llm.health import ProviderHealth
from app.llm.provider import LitellmProvider
from app.llm.tiers import Tier
from app.observability.metrics import Metrics
from tests.fixtures.llm_server import Reply, ScriptedLlmServer
from tests.support import free_port, until

MESSAGES = [{"role": "user", "content": "Say hello."}]
HEARTBEAT = 0.4
"""Shorter than any hold below: a call that outlives it was not ended by the heartbeat."""


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Ends the other client's generation; set at the end whatever happened."""
    event = threading.Event()
    yield event
    event.set()


def embedded(base: str, **overrides: object) -> Settings:
    """The local tiers on an OpenAI-compatible server, as `scripts/run.sh` sets up the embedded model."""
    values: dict[str, object] = {"local_llm_api_base": base, "local_llm_model": "openai/test-model",
                                 "heartbeat_dead_seconds": HEARTBEAT, "llm_queue_check_seconds": 0.1,
                                 "llm_retry_base_delay": 0.01}
    return Settings(**(values | overrides))  # type: ignore[arg-type]


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def test_health_says_busy_with_what_it_measured_while_the_slot_is_held(llm: ScriptedLlmServer,
                                                                            release: threading.Event) -> None:
    provider = LitellmProvider(embedded(f"{llm.url}/v1"))
    async with httpx.AsyncClient() as http:
        health = ProviderHealth(provider, http, cache_seconds=60, timeout=0.5, busy_cache_seconds=0.2)
        await asyncio.to_thread(llm.occupy, release)

        busy = await health.tier(Tier.LOCAL_FAST)

        assert busy["mode"] == "BUSY", busy
        assert busy["detail"].startswith("connected in ") and busy["detail"].endswith(
            " ms, no answer in 0.5 s: serving another request"), busy
        report = await health.report()  # one probe for the three local tiers, reused
        assert {report[t.value]["mode"] for t in (Tier.LOCAL_FAST, Tier.LOCAL_STANDARD, Tier.LOCAL_LARGE)} == {"BUSY"}
        release.set()
        # BUSY is reused only briefly: the free server is ONLINE again long before the 60 s cache ends.
        await until(lambda: llm.slot_waiters == 0 and llm.in_flight == 0, "the slot to be free", timeout=5)
        deadline = time.monotonic() + 5
        while (online := await health.tier(Tier.LOCAL_FAST))["mode"] != "ONLINE":
            assert time.monotonic() < deadline, online
            await asyncio.sleep(0.05)
        assert online == {"mode": "ONLINE", "model": "openai/test-model", "provider": "local", "detail": "",
                          "price": {"source": "local", "input_per_mtok": 0.0, "output_per_mtok": 0.0},
                          "tokens_per_second": None}


async def test_health_says_offline_when_the_connection_is_refused() -> None:
    provider = LitellmProvider(embedded(f"http://127.0.0.1:{free_port()}/v1"))
    async with httpx.AsyncClient() as http:
        local = await ProviderHealth(provider, http, timeout=0.5).tier(Tier.LOCAL_FAST)
    assert (local["mode"], local["detail"]) == ("OFFLINE", "unreachable: ConnectError")


async def test_a_call_waits_for_the_busy_server_past_the_heartbeat_and_completes(llm: ScriptedLlmServer,
                                                                                 release: threading.Event) -> None:
    metrics = Metrics()
    provider = LitellmProvider(embedded(f"{llm.url}/v1", llm_breaker_failures=1), metrics=metrics)
    llm.script(Reply(match="Say hello", content="Hello after the queue."))
    await asyncio.to_thread(llm.occupy, release)

    call = asyncio.create_task(provider.complete(MESSAGES, max_tokens=100))
    await until(lambda: llm.slot_waiters >= 1, "the call to reach the server and wait for the slot", timeout=10)
    queued_at = time.monotonic()
    await until(lambda: sample(metrics, "jervis_llm_queue_waiting") == 1, "the call to count as waiting")
    # Three heartbeats without a byte from the server: a heartbeat would have ended the call by now.
    await until(lambda: time.monotonic() - queued_at > 3 * HEARTBEAT or call.done(), "three heartbeats")
    assert not call.done()
    release.set()

    assert await asyncio.wait_for(call, 10) == "Hello after the queue."
    assert sample(metrics, "jervis_llm_queue_waits_total", tier="local_fast") == 1
    assert sample(metrics, "jervis_llm_queue_waiting") == 0
    assert sample(metrics, "jervis_llm_calls_total", tier="local_fast", outcome="ok") == 1
    assert not provider.breaker.is_open("local")
    [_, answered] = llm.requests
    assert answered.matched == "rule[1]" and answered.path == "/v1/chat/completions"


async def test_a_call_fails_as_heartbeat_timeout_when_the_server_stays_busy_past_the_queue_limit(
        llm: ScriptedLlmServer, release: threading.Event) -> None:
    metrics = Metrics()
    provider = LitellmProvider(embedded(f"{llm.url}/v1", llm_queue_wait_seconds=0.6, llm_breaker_failures=1,
                                        llm_retries=0), metrics=metrics)
    await asyncio.to_thread(llm.occupy, release)

    started = time.monotonic()
    with pytest.raises(HeartbeatTimeoutError) as raised:
        await provider.complete(MESSAGES, max_tokens=100)

    assert isinstance(raised.value, QueueWaitTimeoutError)
    assert 0.6 <= time.monotonic() - started < 5
    assert re.search(r"^the local model was busy for \d+ s: it did not take the call", str(raised.value))
    assert not provider.breaker.is_open("local")  # busy is no failure: one more failure would have opened it
    assert sample(metrics, "jervis_llm_calls_total", tier="local_fast", outcome="queue_timeout") == 1
    assert sample(metrics, "jervis_llm_queue_waiting") == 0


async def test_a_server_that_stops_accepting_connections_while_a_call_waits_fails_it_at_once() -> None:
    """A server that took the call's connection and will never answer, then stops listening (its
    open connections stay, silent): only the bare connect notices, long before any heartbeat."""
    held: list[asyncio.StreamWriter] = []
    arrived = asyncio.Event()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        arrived.set()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    provider = LitellmProvider(embedded(f"http://127.0.0.1:{port}/v1", heartbeat_dead_seconds=30,
                                        llm_queue_wait_seconds=60, llm_retries=0))
    call = asyncio.create_task(provider.complete(MESSAGES, max_tokens=100))
    try:
        await asyncio.wait_for(arrived.wait(), 10)
        server.close()  # no new connections; the call's own stays open and silent
        stopped = time.monotonic()
        with pytest.raises(LlmError) as raised:
            await asyncio.wait_for(call, 10)
        assert time.monotonic() - stopped < 3
        assert not isinstance(raised.value, HeartbeatTimeoutError)
        assert "the local model's server is offline" in str(raised.value)
        assert "ConnectionRefusedError" in str(raised.value)
    finally:
        call.cancel()
        for writer in held:
            writer.close()
        await server.wait_closed()


async def test_litellm_is_given_a_timeout_beyond_the_queue_wait(llm: ScriptedLlmServer,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """litellm's own default (600 s when none is given) would cut a queue wait of 1800 s short."""
    from app.llm import provider as module

    seen: list[float] = []
    litellm = module._litellm()
    real = litellm.acompletion

    async def spy(**kwargs: object) -> object:
        seen.append(float(kwargs["timeout"]))  # type: ignore[arg-type]
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", spy)
    local = LitellmProvider(embedded(f"{llm.url}/v1", llm_queue_wait_seconds=1800, heartbeat_dead_seconds=300))
    await local.complete(MESSAGES, max_tokens=50)
    assert seen == [1800 + 60]
