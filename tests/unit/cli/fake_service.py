"""A scripted stand-in for the orchestrator's HTTP API, for the terminal client's unit tests.

Real HTTP on loopback (the client's own httpx code runs), with each route scripted by the test:
`/stream/{id}` plays one scripted connection per request (events, then a clean end or a dropped
connection) and 404s when none is left; `/status/{id}` answers its scripted replies in order
(the last one repeats). Every request body and `Last-Event-ID` header is recorded.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fixtures.http_server import BackgroundServer

Event = tuple[int, str, dict[str, Any]]


@dataclass
class Connection:
    events: list[Event]
    end: Literal["close", "drop"] = "close"
    """close: the segment ended; drop: the connection breaks mid-stream."""


@dataclass
class FakeService(BackgroundServer):
    name: str = "fake-service"
    connections: list[Connection] = field(default_factory=list)
    statuses: list[dict[str, Any] | int] = field(default_factory=list)
    """Replies of /status in order (an int is an HTTP error status); the last one repeats."""
    thread_id: str = "thread-abc-12345678"
    starts: list[dict[str, Any]] = field(default_factory=list)
    approvals: list[dict[str, Any]] = field(default_factory=list)
    cancels: int = 0
    last_event_ids: list[str | None] = field(default_factory=list)
    status_calls: int = 0
    runs: list[dict[str, Any]] = field(default_factory=list)
    cancel_status: int = 200
    start_replies: list[int] = field(default_factory=list)
    """HTTP statuses /orchestrate/stream answers first (429: busy; 422: refused), then 200."""

    def __post_init__(self) -> None:
        super().__init__()

    def reset(self) -> None:
        with self._lock:
            self.connections, self.statuses, self.starts, self.approvals = [], [], [], []
            self.last_event_ids, self.cancels, self.status_calls, self.runs = [], 0, 0, []
            self.cancel_status, self.start_replies = 200, []

    def build_app(self) -> Starlette:
        return Starlette(routes=[
            Route("/health", self._health),
            Route("/orchestrate/stream", self._start, methods=["POST"]),
            Route("/stream/{thread_id}", self._stream),
            Route("/status/{thread_id}", self._status),
            Route("/approve/{thread_id}", self._approve, methods=["POST"]),
            Route("/cancel/{thread_id}", self._cancel, methods=["POST"]),
            Route("/runs", self._runs),
        ])

    async def _health(self, _: Request) -> Response:
        return JSONResponse({"status": "ok", "service": "orchestrator", "busy": False})

    async def _start(self, request: Request) -> Response:
        with self._lock:
            self.starts.append(json.loads(await request.body()))
            code = self.start_replies.pop(0) if self.start_replies else 200
        if code == 429:
            return JSONResponse({"detail": "Orchestrator busy – another orchestration is running"}, status_code=429)
        if code != 200:
            return JSONResponse({"detail": "workspace_path: escapes DATA_ROOT (symlink?)"}, status_code=code)
        return JSONResponse({"thread_id": self.thread_id, "stream_url": f"/stream/{self.thread_id}"})

    async def _stream(self, request: Request) -> Response:
        with self._lock:
            self.last_event_ids.append(request.headers.get("last-event-id"))
            connection = self.connections.pop(0) if self.connections else None
        if connection is None:
            return JSONResponse({"detail": "No stream"}, status_code=404)
        after = int(request.headers.get("last-event-id") or 0)

        async def body() -> AsyncIterator[str]:
            yield "retry: 2000\n\n"
            for event_id, kind, data in connection.events:
                if event_id > after:
                    yield f"id: {event_id}\nevent: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"
            if connection.end == "drop":
                raise ConnectionResetError("scripted drop")

        return StreamingResponse(body(), media_type="text/event-stream")

    async def _status(self, request: Request) -> Response:
        with self._lock:
            self.status_calls += 1
            reply = (self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]) if self.statuses \
                else {"status": "running"}
        if isinstance(reply, int):
            return JSONResponse({"detail": "scripted failure"}, status_code=reply)
        return JSONResponse({"thread_id": request.path_params["thread_id"], **reply})

    async def _approve(self, request: Request) -> Response:
        with self._lock:
            self.approvals.append(json.loads(await request.body()))
        return JSONResponse({"status": "resuming", "thread_id": request.path_params["thread_id"]})

    async def _cancel(self, request: Request) -> Response:
        with self._lock:
            self.cancels += 1
        if self.cancel_status != 200:
            return JSONResponse({"detail": f"No active task for {request.path_params['thread_id']}"},
                                status_code=self.cancel_status)
        return JSONResponse({"status": "cancelled"})

    async def _runs(self, request: Request) -> Response:
        limit = int(request.query_params.get("limit", "20"))
        return JSONResponse({"runs": self.runs[:limit]})
