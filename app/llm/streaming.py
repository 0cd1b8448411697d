"""Reading a model's streamed answer: a timeout per token instead of per call (the heartbeat),
repetition noticed as it streams, and the connection closed whenever the answer is not read to
its end.

Closing the connection is what stops the model server's generation: llama-cpp-python's server
checks for a gone client after every streamed token (measured: the next request was answered
1 s after a cancelled long generation, against the whole generation's length for a non-streamed
one), so a runaway or a cancelled run's call does not hold the one local model for minutes more.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.llm.errors import HeartbeatTimeoutError, LlmError
from app.llm.runaway import RepetitionGuard

log = logging.getLogger(__name__)

#: Called with the number of streamed pieces so far (progress during long generations).
TokenSink = Callable[[int], None]


@dataclass(frozen=True)
class Finish:
    reason: str
    """"stop" (the model ended its answer), "length" (the output cap) or "repetition" (cut here)."""
    period: int | None = None
    generating: float = 0.0
    """Seconds from the first streamed token to the last: the model's generation speed."""


async def collect(stream: Any, *, heartbeat: float, on_token: TokenSink | None, prompt: str,
                  dead_message: str) -> tuple[str, Finish]:
    """The streamed text and how it ended; `HeartbeatTimeoutError` when no token came for
    `heartbeat` seconds, `LlmError` when the stream broke."""
    parts: list[str] = []
    guard = RepetitionGuard(prompt=prompt)
    first: float | None = None

    def generating() -> float:
        return time.monotonic() - first if first is not None else 0.0

    try:
        while True:
            try:
                # A timeout per token, not per call: a model may stream for as long as it likes.
                async with asyncio.timeout(heartbeat):
                    chunk = await stream.__anext__()
            except StopAsyncIteration:
                return "".join(parts), Finish("stop", generating=generating())
            except TimeoutError as exc:
                raise HeartbeatTimeoutError(dead_message) from exc
            except Exception as exc:
                raise LlmError(f"LLM stream failed: {exc}") from exc
            choice = chunk.choices[0] if chunk.choices else None
            delta = choice.delta.content if choice is not None else None
            if delta:
                first = first if first is not None else time.monotonic()
                parts.append(delta)
                if on_token is not None:
                    on_token(len(parts))
                if guard.feed(delta):
                    await close(stream)
                    return "".join(parts), Finish("repetition", guard.period, generating())
            if choice is not None and choice.finish_reason:
                # The answer is complete (litellm sends the finish reason once the provider's
                # stream has ended). Closing here skips what litellm does after it for its own
                # logging callbacks, which we do not use: rebuilding the whole response in a
                # worker thread, pricing it, building a logging payload (~5 ms a call).
                await close(stream)
                return "".join(parts), Finish("length" if choice.finish_reason == "length" else "stop",
                                              generating=generating())
    except BaseException:
        await close(stream)  # an abandoned (stalled, cancelled) stream would keep generating
        raise


async def close(stream: Any) -> None:
    """Free the HTTP connection of a stream (and with it the server's generation)."""
    aclose = getattr(stream, "aclose", None)
    if aclose is None:
        return
    try:
        await asyncio.wait_for(aclose(), 2.0)
    except Exception:  # closing is best effort
        log.debug("closing LLM stream failed", exc_info=True)
