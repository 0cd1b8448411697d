"""The one door to language models: litellm, streaming, and a token heartbeat instead of timeouts.

A local model may think for minutes, so there is no deadline on the call as a whole (spec §1,
§8.4); a model that sends no token for `heartbeat_dead_seconds` is dead and the call fails.
Tiers and cloud escalation extend this module later; callers only see `complete*`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from app.config import Settings
from app.llm.parsing import JsonParseError, parse_json_object

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm  # noqa: E402  (heavy: imported once, at start-up)

log = logging.getLogger(__name__)
# litellm logs every call at INFO; at our call rate that is noise and measurable overhead.
litellm.suppress_debug_info = True
litellm.disable_streaming_logging = True  # no litellm callbacks are used; usage is counted by us
for _name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
    logging.getLogger(_name).setLevel(logging.WARNING)

Message = dict[str, str]
#: Called with the number of streamed pieces so far (progress during long generations).
TokenSink = Callable[[int], None]
ModelT = TypeVar("ModelT", bound=BaseModel)


class LlmError(RuntimeError):
    """The model could not produce an answer."""


class HeartbeatTimeoutError(LlmError, TimeoutError):
    """No token arrived for the heartbeat window: the model or its server is dead."""


class Llm(Protocol):
    """What graph nodes need from a language model."""

    async def complete(self, messages: Sequence[Message], *, json_mode: bool = False,
                       on_token: TokenSink | None = None) -> str: ...

    async def complete_json(self, messages: Sequence[Message], schema: type[ModelT], *,
                            on_token: TokenSink | None = None) -> ModelT: ...


class LitellmProvider:
    """Local tier through Ollama's chat API (`ollama_chat/<model>`)."""

    def __init__(self, settings: Settings) -> None:
        self._model = f"ollama_chat/{settings.local_model}"
        self._api_base = settings.ollama_url
        self._heartbeat = settings.heartbeat_dead_seconds
        self._max_tokens = settings.llm_max_output_tokens

    async def complete(self, messages: Sequence[Message], *, json_mode: bool = False,
                       on_token: TokenSink | None = None) -> str:
        kwargs: dict[str, Any] = {
            "model": self._model,
            "api_base": self._api_base,
            "messages": list(messages),
            "stream": True,
            "max_tokens": self._max_tokens,
        }
        if json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        try:
            async with asyncio.timeout(self._heartbeat):
                stream = await litellm.acompletion(**kwargs)
        except TimeoutError as exc:
            raise HeartbeatTimeoutError(self._dead_message()) from exc
        except Exception as exc:  # litellm maps transport failures to its own exception types
            raise LlmError(f"LLM call failed: {exc}") from exc
        return await self._collect(stream, on_token)

    async def _collect(self, stream: Any, on_token: TokenSink | None) -> str:
        parts: list[str] = []
        try:
            while True:
                try:
                    # A timeout per token, not per call: a model may stream for as long as it likes.
                    async with asyncio.timeout(self._heartbeat):
                        chunk = await stream.__anext__()
                except StopAsyncIteration:
                    return "".join(parts)
                except TimeoutError as exc:
                    raise HeartbeatTimeoutError(self._dead_message()) from exc
                except Exception as exc:
                    raise LlmError(f"LLM stream failed: {exc}") from exc
                delta = chunk.choices[0].delta.content if chunk.choices else None
                if delta:
                    parts.append(delta)
                    if on_token is not None:
                        on_token(len(parts))
        except BaseException:
            await _close(stream)  # an abandoned (stalled) stream would keep its connection open
            raise

    async def complete_json(self, messages: Sequence[Message], schema: type[ModelT], *,
                            on_token: TokenSink | None = None) -> ModelT:
        """JSON answer validated by `schema`; one repair round that shows the model its error."""
        history = list(messages)
        text = await self.complete(history, json_mode=True, on_token=on_token)
        try:
            return schema.model_validate(parse_json_object(text))
        except (JsonParseError, ValidationError) as exc:
            log.warning("LLM JSON invalid, asking for a repair: %s", _short(exc))
            history += [
                {"role": "assistant", "content": text},
                {
                    "role": "user",
                    "content": f"Your answer was not valid JSON for the schema: {_short(exc)}. "
                    "Reply with the corrected JSON object only.",
                },
            ]
        text = await self.complete(history, json_mode=True, on_token=on_token)
        try:
            return schema.model_validate(parse_json_object(text))
        except (JsonParseError, ValidationError) as exc:
            raise LlmError(f"LLM returned invalid JSON twice: {_short(exc)}") from exc

    def _dead_message(self) -> str:
        return f"LLM heartbeat: no token for {self._heartbeat:g} s ({self._model})"


async def _close(stream: Any) -> None:
    """Free the HTTP connection of an abandoned stream (a stalled one would otherwise linger)."""
    aclose = getattr(stream, "aclose", None)
    if aclose is None:
        return
    try:
        await asyncio.wait_for(aclose(), 2.0)
    except Exception:  # closing is best effort
        log.debug("closing LLM stream failed", exc_info=True)


def _short(exc: Exception, limit: int = 300) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "…"
