"""Correction progress pushes to Kotlin (`docs/api.md`, correction progress).

Only when the request has a `meetingId`: one push as each chunk starts, one every
`interval` seconds while the model streams (from the provider's token callback), and a final
100 % push, each message in the request's language (`t`, chosen by the service). Each push is
one outbox write (`KotlinClient`), so none of this waits for Kotlin; the heartbeats from the
model's token callback, which is synchronous, are queued for the writer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from app.schemas.correction import CorrectionProgressPush
from app.texts import Texts


class ProgressSink(Protocol):
    async def push_correction_progress(self, push: CorrectionProgressPush) -> None: ...

    def push_correction_progress_nowait(self, push: CorrectionProgressPush) -> None: ...


class CorrectionProgress:
    def __init__(
        self,
        sink: ProgressSink | None,
        *,
        meeting_id: str | None,
        client_id: str,
        total_chunks: int,
        t: Texts,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sink = sink if meeting_id else None
        self._meeting_id = meeting_id or ""
        self._client_id = client_id
        self._total = total_chunks
        self._interval = interval
        self._clock = clock
        self._t = t
        self._done = 0
        self._expected_tokens = 1
        self._last_push = clock()
        self._call_tokens = 0  # pieces of the current LLM call (the callback's count restarts per call)
        self._earlier_tokens = 0  # pieces of finished calls
        self.pushes = 0

    @property
    def tokens(self) -> int:
        return self._earlier_tokens + self._call_tokens

    async def chunk_started(self, index: int, expected_tokens: int = 1) -> None:
        """Chunk `index` (0-based) goes to the model; `index` chunks are done."""
        self._done = index
        self._expected_tokens = max(1, expected_tokens)
        self._earlier_tokens += self._call_tokens
        self._call_tokens = 0
        push = self._next(self._percent(), self._t.correction_chunk.format(chunk=index + 1, chunks=self._total))
        if push is not None and self._sink is not None:
            await self._sink.push_correction_progress(push)

    def on_token(self, count: int) -> None:
        """The provider's token callback: `count` pieces streamed so far in the current call."""
        if count < self._call_tokens:  # a new call (the JSON repair round) restarted the count
            self._earlier_tokens += self._call_tokens
        self._call_tokens = count
        if self._sink is not None and self._clock() - self._last_push >= self._interval:
            fraction = min(0.9, self._call_tokens / self._expected_tokens)
            push = self._next(self._percent(fraction), self._t.correction_chunk_generating.format(
                chunk=self._done + 1, chunks=self._total, tokens=self.tokens))
            if push is not None:
                self._sink.push_correction_progress_nowait(push)

    async def finished(self) -> None:
        self._done = self._total
        self._earlier_tokens += self._call_tokens
        self._call_tokens = 0
        push = self._next(100.0, self._t.correction_done)
        if push is not None and self._sink is not None:
            await self._sink.push_correction_progress(push)

    def _percent(self, fraction: float = 0.0) -> float:
        if self._total <= 0:
            return 100.0
        return round((self._done + fraction) / self._total * 100.0, 1)

    def _next(self, percent: float, message: str) -> CorrectionProgressPush | None:
        """The push to send now (None without a sink), counted."""
        self._last_push = self._clock()
        if self._sink is None:
            return None
        self.pushes += 1
        return CorrectionProgressPush(
            meeting_id=self._meeting_id, client_id=self._client_id, percent=percent, chunks_done=self._done,
            total_chunks=self._total, message=message, tokens_generated=self.tokens,
        )
