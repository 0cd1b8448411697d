"""`GET /stream/{thread_id}`: Server-Sent Events of a run, resumable with `Last-Event-ID`."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter, Header, HTTPException, Query
from fastapi.responses import StreamingResponse

from app.api.deps import EventHubDep
from app.runs.events import EventLog

router = APIRouter(tags=["stream"])


async def _sse(log: EventLog, after: int) -> AsyncIterator[str]:
    yield "retry: 2000\n\n"
    async for event in log.follow(after):
        yield ": keepalive\n\n" if event is None else event.sse()


@router.get("/stream/{thread_id}")
async def stream_events(
    thread_id: str,
    hub: EventHubDep,
    last_event_id: str | None = Header(default=None),
    after: int | None = Query(default=None, ge=0, description="Same as Last-Event-ID"),
) -> StreamingResponse:
    log = hub.get(thread_id)
    if log is None:
        raise HTTPException(status_code=404, detail=f"No stream for {thread_id}")
    try:
        cursor = int(last_event_id) if last_event_id else (after or 0)
    except ValueError as exc:
        raise HTTPException(status_code=422, detail="Last-Event-ID must be an integer") from exc
    return StreamingResponse(_sse(log, cursor), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
