"""Chat compression: the prompt (pure) and the compressor with the real provider on the scripted LLM."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from app.chat.compression import ChatCompressor, CompressionError, build_prompt, render_messages
from app.config import Settings
from app.llm.provider import LitellmProvider
from app.schemas.chat import CompressChatRequest
from app.schemas.kotlin import ChatHistoryMessage
from tests.fixtures.llm_server import Reply, ScriptedLlmServer
from tests.support import node_marker


def message(sequence: int, content: str, role: str = "user") -> ChatHistoryMessage:
    return ChatHistoryMessage(role=role, content=content, timestamp=f"2026-02-13T08:00:{sequence:02d}Z",
                              sequence=sequence)


def test_messages_are_rendered_in_sequence_order_and_clipped_to_their_share() -> None:
    text = render_messages([message(2, "druhá"), message(1, "x" * 5000)], budget=2000)
    lines = text.splitlines()
    assert lines[0].startswith("[1] user (2026-02-13T08:00:01Z): xxx") and lines[0].endswith("…")
    assert len(lines[0]) < 1100 and lines[1] == "[2] user (2026-02-13T08:00:02Z): druhá"


def test_prompt_has_the_node_marker_previous_summary_and_schema() -> None:
    request = CompressChatRequest(messages=[message(1, "ahoj")], previous_summary="Dříve: X.")
    system, user = build_prompt(request)
    assert system["content"].startswith(node_marker("compress-chat"))
    for key in ("summary", "key_decisions", "topics", "is_checkpoint", "checkpoint_reason"):
        assert f'"{key}"' in system["content"]
    assert user["content"].startswith("## Previous summary\nDříve: X.") and "[1] user" in user["content"]


class NeverCalled:
    async def complete(self, *args: object, **kwargs: object) -> str:
        raise AssertionError("the model must not be called")

    async def complete_json(self, messages: Sequence[object], schema: type, **kwargs: object) -> object:
        raise AssertionError("the model must not be called")


async def test_empty_messages_never_reach_the_model() -> None:
    result = await ChatCompressor(NeverCalled()).compress(CompressChatRequest(messages=[]))  # type: ignore[arg-type]
    assert result.model_dump() == {"summary": "", "key_decisions": [], "topics": [], "is_checkpoint": False,
                                   "checkpoint_reason": None}


@pytest.fixture
def compressor(llm: ScriptedLlmServer) -> ChatCompressor:
    settings = Settings(ollama_url=llm.url, local_model="test-model", heartbeat_dead_seconds=2)
    return ChatCompressor(LitellmProvider(settings))


async def test_duplicates_and_blanks_are_cleaned(compressor: ChatCompressor, llm: ScriptedLlmServer) -> None:
    llm.script(Reply(match=node_marker("compress-chat"), content=json.dumps({
        "summary": "  Shrnutí.  ", "key_decisions": ["A", "A", " ", "B"], "topics": ["API", "API"],
        "is_checkpoint": True, "checkpoint_reason": "  "})))
    result = await compressor.compress(CompressChatRequest(messages=[message(1, "ahoj")]))
    assert result.model_dump() == {"summary": "Shrnutí.", "key_decisions": ["A", "B"], "topics": ["API"],
                                   "is_checkpoint": True, "checkpoint_reason": None}


async def test_a_blank_summary_twice_is_a_compression_error(compressor: ChatCompressor,
                                                            llm: ScriptedLlmServer) -> None:
    llm.script(Reply(match=node_marker("compress-chat"), content=json.dumps({"summary": " "})))
    with pytest.raises(CompressionError, match="summary"):
        await compressor.compress(CompressChatRequest(messages=[message(1, "ahoj")]))
    assert len(llm.requests) == 2
