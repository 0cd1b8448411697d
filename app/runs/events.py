"""Numbered run events per thread, for `/stream/{thread_id}` (SSE).

Events keep increasing ids across the segments of a thread (start, resume, resume…), so a
client that reconnects with `Last-Event-ID` gets exactly what it missed. The log lives in the
pod's memory and is bounded by count and by bytes, per thread and for the whole hub: the oldest
events go first, a single oversize event is cut down instead of pushing everything else out,
and a client that asks for events no longer held is told which ids it lost (a `gap` event)
before it gets the rest.
The checkpoint in MongoDB stays the source of truth. Every string of an event passes the
service's redaction when it is published (agent output, provider errors and interrupt texts may
quote a secret), so the log never holds what the stream must not send.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from functools import cached_property
from itertools import count
from typing import Any

from app.observability.redaction import no_redaction, redact_data

TERMINAL_EVENTS = frozenset({"done", "error", "approval_required"})
#: Characters kept of each long text in an oversize event, tried in turn until it fits.
_CLIP_STEPS = (4096, 512, 64)
_CLIP_ITEMS = 50


@dataclass(frozen=True)
class RunEvent:
    id: int
    type: str
    data: dict[str, Any]

    def sse(self) -> str:
        return self._wire

    @cached_property
    def _wire(self) -> str:
        payload = json.dumps({"type": self.type, **self.data}, ensure_ascii=False, default=str)
        return f"id: {self.id}\nevent: {self.type}\ndata: {payload}\n\n"

    @cached_property
    def size(self) -> int:
        """Bytes on the wire: what the byte caps count."""
        return len(self._wire.encode())


@dataclass
class _Budget:
    """Bytes held by every log of a hub (a lone log has its own)."""

    held: int = 0


class EventLog:
    """One thread's events: at most `capacity` events and `max_bytes` bytes, oldest dropped first."""

    def __init__(self, capacity: int = 2000, *, max_bytes: int = 1 << 20, max_event_bytes: int = 64 << 10,
                 budget: _Budget | None = None, sequence: Callable[[], int] | None = None,
                 on_publish: Callable[[EventLog], None] | None = None,
                 redact: Callable[[str], str] = no_redaction) -> None:
        self.capacity = capacity
        self.redact = redact
        self.max_bytes = max_bytes
        self.max_event_bytes = min(max_event_bytes, max_bytes)
        self.active = False
        self.last_id = 0
        self.dropped_through = 0
        """Every id up to this one was published and is no longer held (drops are oldest first)."""
        self.bytes = 0
        self._held: deque[tuple[int, RunEvent]] = deque()  # (hub-wide publish order, event)
        self._budget = budget or _Budget()
        self._sequence = sequence or count(1).__next__
        self._on_publish = on_publish
        self._changed = asyncio.Event()

    def publish(self, type_: str, data: dict[str, Any]) -> RunEvent:
        self.last_id += 1
        data = {"ts": time.time(), **redact_data(self.redact, data)}
        event = _within(RunEvent(self.last_id, type_, data), self.max_event_bytes)
        self._held.append((self._sequence(), event))
        self._account(event.size)
        while len(self._held) > self.capacity or (self.bytes > self.max_bytes and len(self._held) > 1):
            self.drop_oldest()
        if self._on_publish is not None:
            self._on_publish(self)
        self._wake()
        return event

    def drop_oldest(self) -> None:
        _, event = self._held.popleft()
        self.dropped_through = event.id
        self._account(-event.size)

    @property
    def oldest_sequence(self) -> int | None:
        """Hub-wide publish order of the oldest event held (None when empty)."""
        return self._held[0][0] if self._held else None

    @property
    def held(self) -> int:
        return len(self._held)

    @property
    def events(self) -> list[RunEvent]:
        """The events still held, oldest first."""
        return [event for _, event in self._held]

    def forget(self) -> None:
        """The hub lets go of this log: its bytes no longer count (a client still reading it is told)."""
        self._account(-self.bytes)
        self._held.clear()
        self.dropped_through = self.last_id

    def open(self) -> None:
        self.active = True
        self._wake()

    def close(self) -> None:
        self.active = False
        self._wake()

    def _account(self, delta: int) -> None:
        self.bytes += delta
        self._budget.held += delta

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def gap(self, after_id: int) -> RunEvent | None:
        """What a client that has seen up to `after_id` lost, as one `gap` event (id = the last lost)."""
        if after_id >= self.dropped_through:
            return None
        first, last = after_id + 1, self.dropped_through
        return RunEvent(last, "gap", {
            "ts": time.time(), "first_lost_id": first, "last_lost_id": last,
            "message": f"events {first}-{last} are no longer held by this pod (stream buffer limits); "
                       f"GET /status has the run's state"})

    async def follow(self, after_id: int = 0, *, keepalive: float = 15.0) -> AsyncIterator[RunEvent | None]:
        """Events after `after_id`, preceded by a `gap` event whenever some of them were dropped
        before they could be sent; ends once the run segment is over and everything was sent.
        Yields None every `keepalive` seconds of silence so the caller can send a comment."""
        cursor = after_id
        while True:
            waiter = self._changed
            lost = self.gap(cursor)
            if lost is not None:
                cursor = lost.id
                yield lost
            pending = [event for _, event in self._held if event.id > cursor]
            for event in pending:
                cursor = event.id
                yield event
            if not self.active and not pending and lost is None:
                return
            if pending or lost is not None:
                continue
            try:
                await asyncio.wait_for(waiter.wait(), keepalive)
            except TimeoutError:
                yield None


class EventHub:
    """Event logs of the most recent threads: at most `max_threads` (idle ones forgotten, least
    recently used first) and `max_bytes` for all together (the oldest events of any thread go first)."""

    def __init__(self, *, capacity: int = 2000, max_threads: int = 500, thread_bytes: int = 1 << 20,
                 max_bytes: int = 64 << 20, event_bytes: int = 64 << 10,
                 redact: Callable[[str], str] = no_redaction) -> None:
        self._capacity = capacity
        self._max_threads = max_threads
        self._thread_bytes = min(thread_bytes, max_bytes)
        self._max_bytes = max_bytes
        self._event_bytes = event_bytes
        self._budget = _Budget()
        self._sequence = count(1).__next__
        self._redact = redact
        self._logs: OrderedDict[str, EventLog] = OrderedDict()

    @property
    def bytes(self) -> int:
        """Bytes of events held for all threads."""
        return self._budget.held

    def log(self, thread_id: str) -> EventLog:
        log = self._logs.get(thread_id)
        if log is None:
            log = self._logs[thread_id] = EventLog(
                self._capacity, max_bytes=self._thread_bytes, max_event_bytes=self._event_bytes,
                budget=self._budget, sequence=self._sequence, on_publish=self._trim, redact=self._redact)
            if len(self._logs) > self._max_threads:
                idle = [tid for tid, entry in self._logs.items() if not entry.active and tid != thread_id]
                for stale in idle[: len(self._logs) - self._max_threads]:
                    self._logs.pop(stale).forget()
        self._logs.move_to_end(thread_id)
        return log

    def get(self, thread_id: str) -> EventLog | None:
        return self._logs.get(thread_id)

    def _trim(self, publisher: EventLog) -> None:
        """Drop the hub's oldest events until it is within `max_bytes`; the event just published
        stays (one event is never larger than a thread's cap, which is within the hub's)."""
        while self._budget.held > self._max_bytes:
            candidates = [log for log in self._logs.values() if log.held > (1 if log is publisher else 0)]
            if not candidates:
                return
            min(candidates, key=lambda log: log.oldest_sequence or 0).drop_oldest()


def _within(event: RunEvent, limit: int) -> RunEvent:
    """The event itself when it fits in `limit` bytes; else its long texts and lists cut (marked
    `truncated`), and as a last resort only its type, time and how large it was."""
    if event.size <= limit:
        return event
    for chars in _CLIP_STEPS:
        clipped = RunEvent(event.id, event.type, {**_shortened(event.data, chars), "truncated": True})
        if clipped.size <= limit:
            return clipped
    return RunEvent(event.id, event.type, {"ts": event.data.get("ts"), "truncated": True,
                                           "original_bytes": event.size})


def _shortened(value: Any, chars: int) -> Any:
    """Every string in `value` (nested) cut to `chars` with how much was left out; lists to their first items."""
    if isinstance(value, str):
        return value if len(value) <= chars else f"{value[:chars]}… ({len(value) - chars} more characters)"
    if isinstance(value, dict):
        return {key: _shortened(item, chars) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        kept = [_shortened(item, chars) for item in value[:_CLIP_ITEMS]]
        return kept + ([f"… ({len(value) - _CLIP_ITEMS} more items)"] if len(value) > _CLIP_ITEMS else [])
    return value
