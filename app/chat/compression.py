"""Chat compression (spec §16.3, `docs/api.md`): a block of older messages becomes a
summary block (summary, key decisions, topics, checkpoint) that later runs read instead."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.llm.provider import Llm, LlmError, Message
from app.schemas.chat import CompressChatRequest, CompressChatResponse
from app.schemas.kotlin import ChatHistoryMessage
from app.texts.clip import clip

log = logging.getLogger(__name__)

NODE = "compress-chat"
#: Characters of conversation a prompt may carry (~40k tokens at 3 chars/token: the GPU
#: context of 49k tokens minus room for the answer); longer messages are shortened evenly.
PROMPT_CHAR_BUDGET = 120_000
MIN_CHARS_PER_MESSAGE = 400
#: Output cap: 3-8 sentences, a few decisions and topics fit in about 500 tokens.
SUMMARY_TOKENS = 1200

_SCHEMA = {
    "summary": "what was asked, done and agreed, 3-8 sentences",
    "key_decisions": ["a decision the user made or agreed to"],
    "topics": ["short topic label"],
    "is_checkpoint": False,
    "checkpoint_reason": None,
}


class CompressionError(RuntimeError):
    """The model produced no usable summary."""


def _null_to_list(value: Any) -> Any:
    return [] if value is None else value


class _Compression(BaseModel):
    """The model's answer; lenient about nulls, strict about the summary."""

    model_config = ConfigDict(extra="ignore")

    summary: str = Field(min_length=1)
    key_decisions: list[str] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    is_checkpoint: bool = False
    checkpoint_reason: str | None = None

    @field_validator("summary")
    @classmethod
    def _summary(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("summary must not be blank")
        return value

    @field_validator("key_decisions", "topics", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _null_to_list(value)

    @field_validator("is_checkpoint", mode="before")
    @classmethod
    def _checkpoint(cls, value: Any) -> Any:
        return False if value is None else value


def render_messages(messages: Sequence[ChatHistoryMessage], budget: int = PROMPT_CHAR_BUDGET) -> str:
    """`[sequence] role (timestamp): content`, oldest first; each message clipped to its share."""
    limit = max(MIN_CHARS_PER_MESSAGE, budget // max(1, len(messages)))
    ordered = sorted(messages, key=lambda m: m.sequence)
    return "\n".join(f"[{m.sequence}] {m.role} ({m.timestamp}): {clip(m.content.strip(), limit)}" for m in ordered)


def build_prompt(request: CompressChatRequest) -> list[Message]:
    system = (
        f"### JERVIS NODE: {NODE}\n"
        "You compress a block of a conversation between a user and Jervis, an AI assistant for "
        "software projects, into a summary block that replaces these messages in later turns. "
        "Keep what later work depends on: the user's goals, what was done, decisions, names, "
        "files, numbers and open questions; drop greetings and repetition. If a previous summary "
        "is given, do not repeat it: summarise only the new messages, consistently with it.\n"
        "key_decisions: decisions the user made or agreed to, one short sentence each. "
        "topics: short topic labels. is_checkpoint: true only when this block closes a phase "
        "(a task finished, a direction changed or a decision fixed that later work builds on); "
        "checkpoint_reason says which, otherwise null.\n"
        "Write in the language of the conversation. Reply with one JSON object with exactly "
        f"these keys: {json.dumps(_SCHEMA, ensure_ascii=False)}"
    )
    sections = []
    if request.previous_summary and request.previous_summary.strip():
        sections.append(f"## Previous summary\n{request.previous_summary.strip()}")
    sections.append(f"## Messages\n{render_messages(request.messages)}")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(sections)}]


def _clean(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(item.strip() for item in items if item and item.strip()))


class ChatCompressor:
    def __init__(self, llm: Llm) -> None:
        self._llm = llm

    async def compress(self, request: CompressChatRequest) -> CompressChatResponse:
        if not request.messages:
            return CompressChatResponse(summary="", key_decisions=[], topics=[], is_checkpoint=False,
                                        checkpoint_reason=None)
        try:
            result = await self._llm.complete_json(build_prompt(request), _Compression, max_tokens=SUMMARY_TOKENS)
        except LlmError as exc:
            raise CompressionError(f"chat compression failed: {exc}") from exc
        reason = (result.checkpoint_reason or "").strip() or None
        log.info("compressed %d messages of task %s (checkpoint: %s)", len(request.messages),
                 request.task_id or "?", result.is_checkpoint)
        return CompressChatResponse(
            summary=result.summary.strip(), key_decisions=_clean(result.key_decisions), topics=_clean(result.topics),
            is_checkpoint=result.is_checkpoint, checkpoint_reason=reason if result.is_checkpoint else None,
        )
