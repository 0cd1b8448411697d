"""Anthropic Messages requests and answers, translated for a local model (`local_messages.py` makes the call).

Claude Code speaks only Anthropic's Messages API. litellm's Anthropic adapter (what its proxy runs
for `/v1/messages`) turns a request into an OpenAI chat completion and the completion back into a
message; around it this module does what a local model needs:

- Anthropic-only options are dropped before translation: `thinking` would route an `openai/` model
  to the Responses API (`/v1/responses`, which llama-cpp-python's server lacks), and
  `context_management` / `output_config` mean nothing to a local server.
- Text-only content becomes a plain string: llama-cpp-python's server refuses a `system` message
  whose content is a list of parts.
- Without a `temperature` the model answers at 0 (Claude Code sends none: its thinking needs 1).
- The output is capped (`CLAUDE_LOCAL_MAX_OUTPUT_TOKENS`, and what the context leaves): Claude Code
  asks for 32,000 tokens, half an hour of a small local model looping.
- A tool call the model wrote as text becomes a `tool_use` block. llama-cpp-python's server
  returns native `tool_calls` only when the tool choice forces one function; with `auto` a Qwen
  model writes its call as `<tool_call>{"name": …, "arguments": {…}}</tool_call>` (Hermes' form).

`agent_key` is the key the local runner hands to an agent for these routes when `API_TOKEN` is set:
derived from the token, so the agent never holds the token itself.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

#: Request keys that mean nothing to a local model (see the module docstring).
DROPPED_KEYS = frozenset({"thinking", "context_management", "output_config", "metadata", "betas", "container",
                          "mcp_servers", "service_tier"})
#: A tool call written as text, Hermes-style (Qwen's chat template); an unclosed one runs to the end.
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCED = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


class MessagesError(Exception):
    """A request the local model cannot answer, as Anthropic's API would report it."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        """Anthropic's error type: invalid_request_error, api_error, overloaded_error, …"""
        self.message = message

    def body(self) -> dict[str, Any]:
        return {"type": "error", "error": {"type": self.kind, "message": self.message}}


def agent_key(api_token: str) -> str:
    """What an agent sends (`x-api-key`) to the service's `/v1/messages` when `API_TOKEN` is set."""
    return hmac.new(api_token.encode(), b"jervis-agent-messages", hashlib.sha256).hexdigest()


def checked(body: object) -> dict[str, Any]:
    """The request body, if it has what a Messages request needs; else a 400 like Anthropic's."""
    if not isinstance(body, dict):
        raise MessagesError(400, "invalid_request_error", "the body must be a JSON object")
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        raise MessagesError(400, "invalid_request_error", "messages: a non-empty list is required")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise MessagesError(400, "invalid_request_error", "max_tokens: a positive integer is required")
    for key in ("tools", "system"):
        if body.get(key) is not None and not isinstance(body[key], (list, str)):
            raise MessagesError(400, "invalid_request_error", f"{key}: a list is required")
    return body


def completion_request(body: Mapping[str, Any], *, max_tokens: int) -> tuple[dict[str, Any], dict[str, str]]:
    """litellm `acompletion` arguments (messages, tools, sampling; no model or endpoint yet) for
    an Anthropic request, and the adapter's map of shortened tool names back to the originals."""
    from litellm.llms.anthropic.pass_through.adapters.handler import (
        LiteLLMMessagesToCompletionTransformationHandler as Adapter,
    )

    kept = {key: value for key, value in body.items()
            if key in ("messages", "system", "stop_sequences", "temperature", "tool_choice", "tools", "top_k",
                       "top_p", "model") and value is not None}
    try:
        kwargs, names = Adapter._prepare_completion_kwargs(**kept, max_tokens=max_tokens, extra_kwargs={})
    except (ValueError, TypeError, KeyError) as exc:
        raise MessagesError(400, "invalid_request_error", f"the request could not be translated: {exc}") from exc
    kwargs = dict(kwargs)
    kwargs["messages"] = [plain_text(message) for message in kwargs.get("messages") or []]
    kwargs.pop("stream", None)
    kwargs.pop("stream_options", None)
    return kwargs, dict(names or {})


def plain_text(message: dict[str, Any]) -> dict[str, Any]:
    """A message whose content is only text parts, with its content as one string."""
    content = message.get("content")
    if isinstance(content, list) and content and all(
            isinstance(part, dict) and part.get("type") == "text" for part in content):
        return {**message, "content": "\n\n".join(str(part.get("text") or "") for part in content)}
    return message


def anthropic_message(response: Any, *, names: dict[str, str], model: str,
                      tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The Anthropic message for a (collected) OpenAI completion, with tool calls the model wrote
    as text turned into `tool_use` blocks; the model named as the client asked for it."""
    from litellm.llms.anthropic.pass_through.adapters.handler import ANTHROPIC_ADAPTER

    message = ANTHROPIC_ADAPTER.translate_completion_output_params(response, tool_name_mapping=names)
    if message is None:
        raise MessagesError(502, "api_error", "the local model's answer could not be translated")
    message = dict(message)
    message["model"] = model
    message.pop("stop_details", None)
    offered = {str(tool.get("name")) for tool in tools or [] if isinstance(tool, dict)}
    blocks = [block for block in message.get("content") or []
              if block.get("type") != "text" or str(block.get("text") or "").strip()]
    if offered and not any(block.get("type") == "tool_use" for block in blocks):
        blocks, found = text_tool_calls(blocks, offered)
        if found:
            message["stop_reason"] = "tool_use"
    message["content"] = blocks
    return message


def text_tool_calls(blocks: list[dict[str, Any]], offered: set[str]) -> tuple[list[dict[str, Any]], bool]:
    """Text blocks holding `<tool_call>{json}</tool_call>` (or only a fenced or bare call object)
    for an offered tool, as `tool_use` blocks after the remaining text."""
    calls: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") != "text":
            kept.append(block)
            continue
        text = str(block.get("text") or "")
        found = [call for raw in _TOOL_CALL.findall(text) if (call := _call(raw, offered)) is not None]
        if found:
            text = _TOOL_CALL.sub("", text).strip()
        elif (whole := _call(text.strip(), offered)) is not None:
            found, text = [whole], ""
        calls += found
        if text:
            kept.append({**block, "text": text})
    uses = [{"type": "tool_use", "id": f"toolu_local_{uuid.uuid4().hex[:20]}", "name": name, "input": arguments}
            for name, arguments in ((call["name"], call["arguments"]) for call in calls)]
    return kept + uses, bool(uses)


def _call(raw: str, offered: set[str]) -> dict[str, Any] | None:
    """`{"name": <offered tool>, "arguments"|"input"|"parameters": {...}}` as name and arguments."""
    fenced = _FENCED.match(raw)
    text = fenced.group(1) if fenced else raw
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text, strict=False)
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("name") not in offered:
        return None
    arguments: Any = next((value[key] for key in ("arguments", "input", "parameters") if key in value), {})
    if isinstance(arguments, str):  # some templates write the arguments as a JSON string
        try:
            arguments = json.loads(arguments, strict=False)
        except ValueError:
            return None
    return {"name": value["name"], "arguments": arguments} if isinstance(arguments, dict) else None


# ------------------------------------------------------------------------- server-sent events
def sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def message_start(message_id: str, model: str, input_tokens: int) -> bytes:
    """The stream's first event, sent before the model answers (pings follow while it works)."""
    return sse("message_start", {"type": "message_start", "message": {
        "id": message_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": input_tokens, "output_tokens": 0}}})


PING = sse("ping", {"type": "ping"})


def message_rest(message: Mapping[str, Any]) -> Iterator[bytes]:
    """The events after `message_start` that carry a whole message: each block (a tool's input as
    one `input_json_delta`), the stop reason with the usage, the end."""
    for index, block in enumerate(message.get("content") or []):
        if block.get("type") == "tool_use":
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input") or {})}
        elif block.get("type") == "text":
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": str(block.get("text") or "")}
        else:
            continue
        yield sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
        yield sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": index})
    usage = dict(message.get("usage") or {})
    yield sse("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": message.get("stop_reason") or "end_turn",
                                          "stop_sequence": message.get("stop_sequence")},
                                "usage": {"input_tokens": int(usage.get("input_tokens") or 0),
                                          "output_tokens": int(usage.get("output_tokens") or 0)}})
    yield sse("message_stop", {"type": "message_stop"})


def error_event(error: MessagesError) -> bytes:
    return sse("error", error.body())
