"""`/v1/messages` answered by the local model: what Claude Code on the local runner talks to when
no Anthropic key is configured (the route is app/api/routes/messages.py).

The call goes to the local tier (the embedded model's OpenAI-compatible server when
`LOCAL_LLM_API_BASE` is set, else Ollama) and behaves like the service's own local calls
(app/llm/provider.py): it waits for a busy model (llama-cpp-python's server answers one request at
a time) for up to `LLM_QUEUE_WAIT_SECONDS` while the server still accepts connections, a stream with
no token for `HEARTBEAT_DEAD_SECONDS` is dead, and closing the stream (the client gone, the step
cancelled) stops the server's generation.

A turn is read whole before it is answered: a tool call the model wrote as text needs the whole
text (`anthropic_messages.py`). A streamed request gets `message_start` at once and then a `ping`
every `PING_SECONDS` until the turn is ready, so its connection never idles through a queue or a
long prompt. A failure known within `HEADERS_GRACE_SECONDS` is an HTTP error with Anthropic's
status (Claude Code retries 5xx and 529, never a 400); a later one is an `error` event.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass, field
from typing import Any

from app.config import Settings
from app.llm import queue_wait
from app.llm.anthropic_messages import (
    PING,
    MessagesError,
    anthropic_message,
    checked,
    completion_request,
    error_event,
    message_rest,
    message_start,
)
from app.llm.provider import LITELLM_TIMEOUT_MARGIN, LOCAL_PROVIDERS, _litellm
from app.llm.streaming import close
from app.llm.tiers import LOCAL_MAX_TOKENS, Tier, TierSpec, tier_specs
from app.observability.metrics import Metrics

log = logging.getLogger(__name__)

PING_SECONDS = 5.0
HEADERS_GRACE_SECONDS = 2.0
#: The least output a turn must have room for in the local context; a longer prompt is refused
#: the way Anthropic refuses one ("prompt is too long"), which makes Claude Code compact its history.
MIN_OUTPUT_TOKENS = 512
#: The `tier` label of these calls in the LLM metrics.
METRICS_TIER = "agent_messages"


@dataclass(frozen=True)
class Prepared:
    """A checked request, translated for the local model."""

    kwargs: dict[str, Any]
    """litellm `acompletion` arguments."""
    names: dict[str, str]
    model: str
    """The model as the client named it (answers carry it back)."""
    tools: list[dict[str, Any]] | None
    prompt_tokens: int
    stream: bool


@dataclass
class Reply:
    """A JSON body with its status, or (status 200) the server-sent events of a streamed answer."""

    status: int
    body: dict[str, Any] | None = None
    events: AsyncIterator[bytes] | None = field(default=None, repr=False)


class LocalMessages:
    def __init__(self, settings: Settings, *, metrics: Metrics | None = None) -> None:
        self._spec: TierSpec = tier_specs(settings)[Tier.LOCAL_LARGE]
        self._context = self._spec.context_tokens or LOCAL_MAX_TOKENS
        self._cap = settings.claude_local_max_output_tokens
        self._heartbeat = settings.heartbeat_dead_seconds
        self._queue_wait = settings.llm_queue_wait_seconds
        self._queue_check = settings.llm_queue_check_seconds
        self._metrics = metrics

    @property
    def model(self) -> str:
        return self._spec.model

    def prepare(self, body: object) -> Prepared:
        """The request for the local model, its output capped to what the context leaves (at most
        `CLAUDE_LOCAL_MAX_OUTPUT_TOKENS`). Raises MessagesError (400) for a request it cannot take."""
        request = checked(body)
        kwargs, names = completion_request(request, max_tokens=request["max_tokens"])
        prompt = self.count(kwargs)
        room = self._context - prompt
        if room < MIN_OUTPUT_TOKENS:
            raise MessagesError(400, "invalid_request_error",
                                f"prompt is too long: {prompt} tokens > {self._context - MIN_OUTPUT_TOKENS} maximum")
        spec = self._spec
        kwargs.update(spec.call_kwargs(), max_tokens=min(request["max_tokens"], self._cap, room), stream=True,
                      stream_options={"include_usage": True}, _skip_mcp_handler=True,
                      timeout=max(self._heartbeat, self._queue_wait) + LITELLM_TIMEOUT_MARGIN)
        # `_skip_mcp_handler`: litellm would otherwise import its MCP gateway (the `mcp` package of
        # litellm[proxy]) for any request with tools.
        # Claude Code sends no temperature (its thinking, dropped here, needs the default of 1): the
        # local model answers reproducibly instead, as it does the service's own structured calls.
        kwargs.setdefault("temperature", 0.0)
        tools = request.get("tools")
        return Prepared(kwargs=kwargs, names=names, model=str(request.get("model") or spec.model),
                        tools=tools if isinstance(tools, list) else None, prompt_tokens=prompt,
                        stream=request.get("stream") is True)

    def count_tokens(self, body: object) -> int:
        """`/v1/messages/count_tokens`: the request's prompt tokens as the local model would get them."""
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            raise MessagesError(400, "invalid_request_error", "messages: a list is required")
        kwargs, _ = completion_request(body, max_tokens=1)
        return self.count(kwargs)

    def count(self, kwargs: dict[str, Any]) -> int:
        try:
            return int(_litellm().token_counter(model=self._spec.model, messages=kwargs.get("messages") or [],
                                                tools=kwargs.get("tools")))
        except Exception:  # an unknown tokenizer: an estimate beats failing the request
            return len(json.dumps([kwargs.get("messages"), kwargs.get("tools")])) // 4

    async def reply(self, prepared: Prepared) -> Reply:
        """The answer: JSON, or events for a streamed request (whose stream owns the call)."""
        task = asyncio.ensure_future(self.answer(prepared))
        try:
            await asyncio.wait({task}, timeout=HEADERS_GRACE_SECONDS if prepared.stream else None)
        except BaseException:  # the request itself was cancelled
            await _cancel(task)
            raise
        if task.done() and isinstance(error := task.exception(), MessagesError):
            return Reply(error.status, error.body())
        if not prepared.stream:
            return Reply(200, task.result())
        return Reply(200, events=self._events(task, prepared))

    async def _events(self, task: asyncio.Future[dict[str, Any]], prepared: Prepared) -> AsyncIterator[bytes]:
        try:
            yield message_start(f"msg_local_{uuid.uuid4().hex[:24]}", prepared.model, prepared.prompt_tokens)
            while not task.done():
                await asyncio.wait({task}, timeout=PING_SECONDS)
                if not task.done():
                    yield PING
            try:
                message = task.result()
            except MessagesError as exc:
                yield error_event(exc)
                return
            except Exception as exc:
                log.exception("answering /v1/messages failed")
                yield error_event(MessagesError(500, "api_error", f"{type(exc).__name__}: {exc}"))
                return
            for event in message_rest(message):
                yield event
        finally:  # the client went away (or the answer was sent): the local model stops generating
            await _cancel(task)

    async def answer(self, prepared: Prepared) -> dict[str, Any]:
        """The whole Anthropic message of one turn. Raises MessagesError."""
        started = time.monotonic()
        try:
            stream = await self._taken(_litellm().acompletion(**prepared.kwargs))
        except MessagesError:
            self._count("queue_timeout")
            raise
        except Exception as exc:  # litellm maps transport and HTTP failures to its own exceptions
            self._count("error")
            raise upstream_error(exc) from exc
        chunks: list[Any] = []
        try:
            while True:
                try:
                    async with asyncio.timeout(self._heartbeat):
                        chunks.append(await stream.__anext__())
                except StopAsyncIteration:
                    break
                except TimeoutError as exc:
                    self._count("heartbeat_timeout")
                    raise MessagesError(504, "api_error", f"the local model ({self._spec.model}) sent no token "
                                                          f"for {self._heartbeat:g} s") from exc
        except MessagesError:
            raise
        except Exception as exc:
            self._count("error")
            raise upstream_error(exc) from exc
        finally:
            await close(stream)
        response = _litellm().stream_chunk_builder(chunks, messages=prepared.kwargs["messages"]) if chunks else None
        if response is None:
            self._count("error")
            raise MessagesError(502, "api_error", f"the local model ({self._spec.model}) sent no answer")
        message = anthropic_message(response, names=prepared.names, model=prepared.model, tools=prepared.tools)
        # llama-cpp-python's server sends no usage in a stream; litellm then counts the messages
        # without the tools (measured: 1,457 of the 3,141 prompt tokens the server evaluated).
        usage = message.setdefault("usage", {})
        usage["input_tokens"] = max(int(usage.get("input_tokens") or 0), prepared.prompt_tokens)
        if self._metrics is not None:
            self._metrics.llm_call(METRICS_TIER, "ok" if message.get("stop_reason") != "max_tokens" else "length",
                                   seconds=time.monotonic() - started, prompt_tokens=usage["input_tokens"],
                                   completion_tokens=int(usage.get("output_tokens") or 0))
        return message

    async def _taken(self, call: Coroutine[Any, Any, Any]) -> Any:
        """The stream once the local server has taken the call: the service's own rule
        (`queue_wait.taken`), with Anthropic's errors (busy too long: 529, refused: 502)."""
        spec = self._spec
        if spec.provider not in LOCAL_PROVIDERS or not spec.api_base:
            return await call

        def on_waiting(begins: bool, waited: float) -> None:
            if self._metrics is not None:
                self._metrics.llm_queue_wait(METRICS_TIER, waiting=begins)

        return await queue_wait.taken(
            call, api_base=spec.api_base, queue_wait=self._queue_wait, queue_check=self._queue_check,
            on_waiting=on_waiting,
            busy=lambda waited: MessagesError(529, "overloaded_error",
                                              f"the local model was busy for {waited:.0f} s ({spec.model}); "
                                              f"LLM_QUEUE_WAIT_SECONDS is {self._queue_wait:g}"),
            offline=lambda exc, waited: MessagesError(
                502, "api_error", f"the local model's server is offline ({spec.model} at {spec.api_base}): "
                                  f"{type(exc).__name__}"))

    def _count(self, outcome: str) -> None:
        if self._metrics is not None:
            self._metrics.llm_call(METRICS_TIER, outcome)


def upstream_error(exc: Exception) -> MessagesError:
    """A failed local call as Anthropic would report it: the server's 4xx as the client's bad
    request (not retried), a busy server as overloaded, anything else as an API error."""
    status = getattr(exc, "status_code", None)
    message = f"the local model failed: {str(exc).strip()[:1000]}"
    if status == 429:
        return MessagesError(429, "rate_limit_error", message)
    if isinstance(status, int) and 400 <= status < 500 and status not in (401, 403, 404, 408):
        return MessagesError(400, "invalid_request_error", message)
    return MessagesError(502, "api_error", message)


async def _cancel(task: asyncio.Future[Any]) -> None:
    if not task.done():
        task.cancel()
    await asyncio.gather(task, return_exceptions=True)
