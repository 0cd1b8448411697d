"""Waiting for a busy local model server to take a call.

A local server that serves one request at a time (llama-cpp-python's, Ollama with one slot)
keeps the others connected and unanswered while it generates. So a local call waits for its turn,
up to `LLM_QUEUE_WAIT_SECONDS`, for as long as the server still accepts TCP connections: refused
means the server is gone. The service's own calls (`LitellmProvider`) and the agents' calls
through `/v1/messages` (`LocalMessages`) wait by this one rule, each raising its own errors.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

from app.llm.endpoint import connect_seconds
from app.llm.streaming import close

#: Longest TCP connect of one "is it still there" check.
CONNECT_CHECK_SECONDS = 5.0


async def taken(call: Coroutine[Any, Any, Any], *, api_base: str, queue_wait: float, queue_check: float,
                on_waiting: Callable[[bool, float], None], busy: Callable[[float], Exception],
                offline: Callable[[Exception, float], Exception]) -> Any:
    """The result of `call` (a stream) once the server has taken it.

    Every `queue_check` seconds without an answer the server's port is tried: refused raises
    `offline(exc, waited)` at once; past `queue_wait` seconds `busy(waited)` is raised.
    `on_waiting(True, waited)` is called when the wait starts, `on_waiting(False, waited)` when it
    ends. A stream taken just as the wait gave up is closed (the server's generation freed).
    """
    task = asyncio.ensure_future(call)
    started = time.monotonic()
    waiting = done_taken = False
    try:
        while True:
            left = queue_wait - (time.monotonic() - started)
            done, _ = await asyncio.wait({task}, timeout=max(0.0, min(queue_check, left)))
            if done:
                done_taken = True
                return task.result()
            waited = time.monotonic() - started
            if waited >= queue_wait:
                raise busy(waited)
            if not waiting:
                waiting = True
                on_waiting(True, waited)
            try:
                await connect_seconds(api_base, timeout=min(queue_check, CONNECT_CHECK_SECONDS))
            except (OSError, TimeoutError, ValueError) as exc:
                raise offline(exc, waited) from exc
    finally:
        if waiting:
            on_waiting(False, time.monotonic() - started)
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        elif not done_taken and not task.cancelled() and task.exception() is None:
            await close(task.result())
