"""Reading `/stream/{thread_id}` (Server-Sent Events) without losing or repeating an event.

The service numbers a thread's events across all its segments (start, resume, …) and replays
what follows `Last-Event-ID`. So the cursor is the last id seen, kept across reconnects and
segments; a dropped connection is retried with it until a deadline, and a 404 (the log lives in
the memory of a pod that no longer has it) is handed to the caller, who polls `/status` instead.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from app.cli.client import ServiceClient

#: The service's keepalive comes every 15 s; twice that in silence means the connection is dead.
READ_TIMEOUT_SECONDS = 35.0
RECONNECT_SECONDS = 60.0


class StreamLostError(ConnectionError):
    """The stream could not be reopened before the reconnect deadline."""


@dataclass(frozen=True)
class SseEvent:
    id: int | None
    type: str
    data: dict[str, Any] = field(default_factory=dict)


class SseParser:
    """Line-by-line `text/event-stream` parsing: `id`, `event`, multi-line `data`, comments.
    `retry` is ignored (reconnecting is ours to pace)."""

    def __init__(self) -> None:
        self._id: str | None = None
        self._type = ""
        self._data: list[str] = []

    def feed(self, line: str) -> SseEvent | None:
        """One line without its newline; returns the event a blank line completes."""
        line = line.rstrip("\r\n")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "id":
            self._id = value
        elif name == "event":
            self._type = value
        elif name == "data":
            self._data.append(value)
        return None

    def _dispatch(self) -> SseEvent | None:
        raw_id, kind, data = self._id, self._type, self._data
        self._id, self._type, self._data = None, "", []
        if not data:
            return None
        text = "\n".join(data)
        try:
            payload = json.loads(text)
        except ValueError:
            payload = {"raw": text}
        if not isinstance(payload, dict):
            payload = {"value": payload}
        try:
            event_id = int(raw_id) if raw_id is not None else None
        except ValueError:
            event_id = None
        return SseEvent(event_id, kind or str(payload.get("type") or "message"), payload)


def parse(text: str) -> list[SseEvent]:
    """Every complete event of a stream's text (tests and one-shot reads)."""
    parser = SseParser()
    events = [parser.feed(line) for line in text.splitlines()]
    return [event for event in events if event is not None]


class EventStream:
    """The events of one thread, followed across dropped connections.

    `events()` yields each event once, in order, and returns when the service ends the segment
    (after `approval_required`, `done`, `error` or `suspended`). Call it again to follow the next
    segment: the cursor continues. It raises `StreamGoneError` (404) and `StreamLostError`.
    """

    def __init__(self, client: ServiceClient, thread_id: str, *, cursor: int = 0,
                 reconnect_seconds: float = RECONNECT_SECONDS, read_timeout: float = READ_TIMEOUT_SECONDS,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self._client = client
        self.thread_id = thread_id
        self.cursor = cursor
        self.reconnects = 0
        self._reconnect_seconds = reconnect_seconds
        self._read_timeout = read_timeout
        self._clock = clock
        self._sleep = sleep

    def events(self) -> Iterator[SseEvent]:
        deadline: float | None = None
        delay = 0.25
        while True:
            try:
                with self._client.stream_lines(self.thread_id, self.cursor, read_timeout=self._read_timeout) as lines:
                    deadline, delay = None, 0.25
                    parser = SseParser()
                    for line in lines:
                        event = parser.feed(line)
                        if event is None:
                            continue
                        if event.id is not None:
                            if event.id <= self.cursor:  # already seen (a replay after reconnecting)
                                continue
                            self.cursor = event.id
                        yield event
                return
            except httpx.TransportError as exc:
                now = self._clock()
                deadline = deadline if deadline is not None else now + self._reconnect_seconds
                if now >= deadline:
                    raise StreamLostError(
                        f"event stream of {self.thread_id} lost: {type(exc).__name__}: {exc}") from exc
                self.reconnects += 1
                self._sleep(min(delay, max(0.0, deadline - now)))
                delay = min(delay * 2, 5.0)
