"""Anthropic Messages answered by the local model (app/llm/local_messages.py), against the scripted
LLM's OpenAI endpoint as llama-cpp-python's server: the request as the local server gets it, the
answer as Claude Code reads it (streamed events, tool calls native or written as text), waiting for
a busy model, and errors in Anthropic's shape. The route and its key: tests/api/test_messages.py."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from app.config import Settings
from app.llm import local_messages
from app.llm.anthropic_messages import MessagesError, text_tool_calls
from app.llm.local_messages import LocalMessages, Reply
from app.observability.metrics import Metrics
from tests.fixtures.llm_server import Reply as Rule
from tests.fixtures.llm_server import ScriptedLlmServer
from tests.support import free_port, until

WRITE_TOOL = {"name": "Write", "description": "Write a file",
              "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"},
                                                                "content": {"type": "string"}},
                               "required": ["file_path", "content"]}}
WRITE = {"name": "Write", "input": {"file_path": "/w/calc.py", "content": "def add(a, b):\n    return a + b\n"}}


def claude_request(text: str = "Add add(a, b) to calc.py", **overrides: Any) -> dict[str, Any]:
    """A request as Claude Code sends it: system blocks, cache control, thinking, 32k output."""
    return {"model": "openai/qwen-local", "max_tokens": 32000, "stream": True,
            "system": [{"type": "text", "text": "You are Claude Code."},
                       {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": text,
                                                       "cache_control": {"type": "ephemeral"}}]}],
            "tools": [WRITE_TOOL], "thinking": {"type": "adaptive"}, "output_config": {"effort": "high"},
            "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
            "metadata": {"user_id": "u"}} | overrides


def settings(base: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"local_llm_api_base": base, "local_llm_model": "openai/test-model",
                              "local_context_tokens": 16384, "heartbeat_dead_seconds": 5,
                              "llm_queue_check_seconds": 0.1}
    return Settings(**(values | overrides))


async def events(reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    assert reply.events is not None, reply
    raw = b"".join([chunk async for chunk in reply.events]).decode()
    return [(block.split("\n")[0].removeprefix("event: "), json.loads(block.split("\n")[1].removeprefix("data: ")))
            for block in raw.strip().split("\n\n")]


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


async def test_a_streamed_turn_with_a_native_tool_call_reaches_claude_code_as_tool_use(
        llm: ScriptedLlmServer) -> None:
    llm.script(Rule("Add add(a, b)", "I will write it.", tool_use=WRITE, name="write"))
    messages = LocalMessages(settings(f"{llm.url}/v1"))

    reply = await messages.reply(messages.prepare(claude_request()))
    got = await events(reply)

    assert [name for name, _ in got] == ["message_start", "content_block_start", "content_block_delta",
                                         "content_block_stop", "content_block_start", "content_block_delta",
                                         "content_block_stop", "message_delta", "message_stop"]
    assert got[0][1]["message"]["model"] == "openai/qwen-local" and got[0][1]["message"]["usage"]["input_tokens"] > 0
    assert got[2][1]["delta"] == {"type": "text_delta", "text": "I will write it."}
    assert got[4][1]["content_block"]["type"] == "tool_use" and got[4][1]["content_block"]["name"] == "Write"
    assert json.loads(got[5][1]["delta"]["partial_json"]) == WRITE["input"]
    assert got[7][1]["delta"]["stop_reason"] == "tool_use" and got[7][1]["usage"]["output_tokens"] > 0
    (request,) = llm.requests
    assert request.path == "/v1/chat/completions" and request.model == "test-model" and request.stream
    body = request.body
    assert body["max_tokens"] == 4096  # CLAUDE_LOCAL_MAX_OUTPUT_TOKENS, not Claude Code's 32,000
    assert body["messages"][0] == {"role": "system", "content": "You are Claude Code.\n\nBe brief."}
    assert body["messages"][1] == {"role": "user", "content": "Add add(a, b) to calc.py"}
    assert not {"thinking", "reasoning_effort", "context_management", "output_config", "metadata"} & body.keys()
    assert body["tools"][0]["function"]["name"] == "Write"


async def test_a_tool_call_written_as_text_becomes_tool_use(llm: ScriptedLlmServer) -> None:
    """What llama-cpp-python's server returns for a Qwen model with `tool_choice: auto`."""
    text = f"<tool_call>\n{json.dumps({'name': 'Write', 'arguments': WRITE['input']})}\n</tool_call>"
    llm.script(Rule("Add add(a, b)", text))
    messages = LocalMessages(settings(f"{llm.url}/v1"))

    reply = await messages.reply(messages.prepare(claude_request(stream=False)))

    assert reply.status == 200 and reply.body is not None
    assert reply.body["stop_reason"] == "tool_use"
    [use] = reply.body["content"]
    assert (use["type"], use["name"], use["input"]) == ("tool_use", "Write", WRITE["input"])


def test_text_tool_calls_keep_the_prose_and_ignore_tools_not_offered() -> None:
    call = '{"name": "Bash", "arguments": "{\\"command\\": \\"ls\\"}"}'
    blocks, found = text_tool_calls([{"type": "text", "text": f"Listing.\n<tool_call>{call}</tool_call>"}],
                                    {"Bash", "Write"})
    assert found and blocks[0] == {"type": "text", "text": "Listing."}
    assert (blocks[1]["name"], blocks[1]["input"]) == ("Bash", {"command": "ls"})
    fenced = '```json\n{"name": "Write", "arguments": {"file_path": "a", "content": "b"}}\n```'
    assert text_tool_calls([{"type": "text", "text": fenced}], {"Write"})[0][0]["input"] == {"file_path": "a",
                                                                                            "content": "b"}
    unknown = [{"type": "text", "text": '<tool_call>{"name": "Delete", "arguments": {}}</tool_call>'}]
    assert text_tool_calls(unknown, {"Write"}) == (unknown, False)
    assert text_tool_calls([{"type": "text", "text": "def add(a, b): ..."}], {"Write"})[1] is False


async def test_a_busy_model_is_waited_for_with_pings_meanwhile(llm: ScriptedLlmServer, release: threading.Event,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the heartbeat and the header grace: the client gets `message_start`, then pings, then
    the turn once the other client's generation is done (a busy server is no failure)."""
    monkeypatch.setattr(local_messages, "PING_SECONDS", 0.2)
    monkeypatch.setattr(local_messages, "HEADERS_GRACE_SECONDS", 0.2)
    llm.script(Rule("Add add(a, b)", "Done after the queue."))
    metrics = Metrics()
    messages = LocalMessages(settings(f"{llm.url}/v1", heartbeat_dead_seconds=0.3), metrics=metrics)
    await asyncio.to_thread(llm.occupy, release)

    reply = await messages.reply(messages.prepare(claude_request()))
    assert reply.events is not None and reply.status == 200
    first = [await anext(reply.events), await anext(reply.events)]
    started = time.monotonic()
    await until(lambda: time.monotonic() - started > 1.0, "three heartbeats of waiting")
    release.set()
    rest = b"".join([chunk async for chunk in reply.events]).decode()

    assert first[0].startswith(b"event: message_start") and first[1].startswith(b"event: ping")
    assert '"text":"Done after the queue."' in rest and "event: error" not in rest
    assert metrics.registry.get_sample_value("jervis_llm_queue_waits_total", {"tier": "agent_messages"}) == 1
    assert metrics.registry.get_sample_value("jervis_llm_calls_total",
                                             {"tier": "agent_messages", "outcome": "ok"}) == 1


async def test_a_client_that_goes_away_stops_the_generation(llm: ScriptedLlmServer,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_messages, "HEADERS_GRACE_SECONDS", 0.1)
    llm.script(Rule("Add add(a, b)", "x" * 400, chunk_size=4, chunk_delay=0.05))
    messages = LocalMessages(settings(f"{llm.url}/v1"))
    reply = await messages.reply(messages.prepare(claude_request()))
    assert reply.events is not None
    await anext(reply.events)  # message_start
    await until(lambda: bool(llm.requests), "the local model to get the call")

    await reply.events.aclose()  # what the server does to the response of a client that went away

    await until(lambda: llm.requests[0].streamed_to_end is False, "the stream to be closed before its end")


async def test_the_local_servers_client_error_is_a_400_claude_code_does_not_retry(llm: ScriptedLlmServer) -> None:
    llm.script(Rule(None, status=400, error_body=json.dumps({"error": {"message": "bad grammar",
                                                                       "type": "invalid_request_error"}})))
    messages = LocalMessages(settings(f"{llm.url}/v1", llm_retries=0))

    reply = await messages.reply(messages.prepare(claude_request()))

    assert reply.status == 400 and reply.events is None and reply.body is not None
    assert reply.body["type"] == "error" and reply.body["error"]["type"] == "invalid_request_error"
    assert "bad grammar" in reply.body["error"]["message"]


async def test_an_offline_local_model_is_a_502() -> None:
    messages = LocalMessages(settings(f"http://127.0.0.1:{free_port()}/v1"))
    reply = await messages.reply(messages.prepare(claude_request()))
    assert reply.status == 502 and reply.body is not None and reply.body["error"]["type"] == "api_error"


def test_a_prompt_the_local_context_cannot_hold_is_refused_like_anthropic_refuses_it() -> None:
    messages = LocalMessages(settings("http://127.0.0.1:9/v1", local_context_tokens=1024))
    with pytest.raises(MessagesError, match=r"^prompt is too long: \d+ tokens > 512 maximum$") as raised:
        messages.prepare(claude_request("word " * 600))
    assert (raised.value.status, raised.value.kind) == (400, "invalid_request_error")
    prepared = messages.prepare(claude_request("short"))  # the output gets what the context leaves
    assert prepared.kwargs["max_tokens"] == 1024 - prepared.prompt_tokens


@pytest.mark.parametrize("body", [[], {"messages": []}, {"messages": [{"role": "user", "content": "x"}]},
                                  {"messages": [{"role": "user", "content": "x"}], "max_tokens": True}])
def test_what_is_not_a_messages_request_is_a_400(body: object) -> None:
    with pytest.raises(MessagesError) as raised:
        LocalMessages(settings("http://127.0.0.1:9/v1")).prepare(body)
    assert (raised.value.status, raised.value.kind) == (400, "invalid_request_error")


def test_count_tokens_counts_what_the_local_model_would_read() -> None:
    messages = LocalMessages(settings("http://127.0.0.1:9/v1"))
    short = messages.count_tokens(claude_request("one"))
    assert 0 < short < messages.count_tokens(claude_request("one two three " * 50))
