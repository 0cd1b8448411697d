"""Numbered run events per thread, for `/stream/{thread_id}` (SSE).

Events keep increasing ids across the segments of a thread (start, resume, resume…), so a
client that reconnects with `Last-Event-ID` gets exactly what it missed. The log lives in the
pod's memory and is bounded; the checkpoint in MongoDB stays the source of truth. Every string of
an event passes the service's redaction when it is published (agent output, provider errors and
interrupt texts may quote a secret), so the log never holds what the stream must not send.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from app.observability.redaction import no_redaction, redact_data

TERMINAL_EVENTS = frozenset({"done", "error", "approval_required"})


@dataclass(frozen=True)
class RunEvent:
    id: int
    type: str
    data: dict[str, Any]

    def sse(self) -> str:
        payload = json.dumps({"type": self.type, **self.data}, ensure_ascii=False, default=str)
        return f"id: {self.id}\nevent: {self.type}\ndata: {payload}\n\n"


@dataclass
class EventLog:
    capacity: int
    redact: Callable[[str], str] = no_redaction
    events: deque[RunEvent] = field(init=False)
    active: bool = False
    last_id: int = 0
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.events = deque(maxlen=self.capacity)

    def publish(self, type_: str, data: dict[str, Any]) -> RunEvent:
        self.last_id += 1
        event = RunEvent(self.last_id, type_, {"ts": time.time(), **redact_data(self.redact, data)})
        self.events.append(event)
        self._wake()
        return event

    def open(self) -> None:
        self.active = True
        self._wake()

    def close(self) -> None:
        self.active = False
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def follow(self, after_id: int = 0, *, keepalive: float = 15.0) -> AsyncIterator[RunEvent | None]:
        """Events after `after_id`; ends once the run segment is over and everything was sent.
        Yields None every `keepalive` seconds of silence so the caller can send a comment."""
        cursor = after_id
        while True:
            waiter = self._changed
            pending = [e for e in self.events if e.id > cursor]
            for event in pending:
                cursor = event.id
                yield event
            if not self.active and not pending:
                return
            if pending:
                continue
            try:
                await asyncio.wait_for(waiter.wait(), keepalive)
            except TimeoutError:
                yield None


class EventHub:
    """Event logs of the most recent threads (oldest forgotten first)."""

    def __init__(self, *, capacity: int = 2000, max_threads: int = 500,
                 redact: Callable[[str], str] = no_redaction) -> None:
        self._capacity = capacity
        self._max_threads = max_threads
        self._redact = redact
        self._logs: OrderedDict[str, EventLog] = OrderedDict()

    def log(self, thread_id: str) -> EventLog:
        log = self._logs.get(thread_id)
        if log is None:
            log = self._logs[thread_id] = EventLog(self._capacity, self._redact)
            if len(self._logs) > self._max_threads:
                idle = [tid for tid, entry in self._logs.items() if not entry.active and tid != thread_id]
                for stale in idle[: len(self._logs) - self._max_threads]:
                    del self._logs[stale]
        self._logs.move_to_end(thread_id)
        return log

    def get(self, thread_id: str) -> EventLog | None:
        return self._logs.get(thread_id)
