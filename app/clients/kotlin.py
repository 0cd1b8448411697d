"""Pushes to the Kotlin server (`docs/api.md`, pushes to Kotlin).

Pushes leave through one ordered queue drained by a background sender, so a graph node never
waits for Kotlin (the original service did, and paid ~200 ms per node). Order is kept, so a
run's terminal status always arrives after its progress. Progress is a heartbeat and is tried
once; a status push decides the task's fate on the Kotlin side, so it is retried with backoff.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import httpx

from app.observability.logs import current_run, run_context
from app.observability.metrics import Metrics
from app.schemas.correction import CorrectionProgressPush
from app.schemas.kotlin import (
    ProgressPush,
    StatusPush,
    TrackerCreateIssue,
    TrackerUpdateIssue,
)

log = logging.getLogger(__name__)

PROGRESS_PATH = "/internal/orchestrator-progress"
STATUS_PATH = "/internal/orchestrator-status"
CORRECTION_PROGRESS_PATH = "/internal/correction-progress"


class TrackerError(RuntimeError):
    """The Kotlin tracker endpoint failed."""


@dataclass(frozen=True)
class _Outgoing:
    path: str
    body: dict[str, Any]
    attempts: int
    #: The run that queued it, so the sender's log lines name that run.
    run: tuple[str | None, str | None] = field(default_factory=current_run)


class KotlinClient:
    def __init__(
        self,
        http: httpx.AsyncClient,
        base_url: str,
        *,
        push_timeout: float = 5.0,
        push_attempts: int = 3,
        tracker_timeout: float = 30.0,
        retry_base_delay: float = 0.5,
        metrics: Metrics | None = None,
    ) -> None:
        self._http = http
        self._base = base_url.rstrip("/")
        self._push_timeout = push_timeout
        self._push_attempts = max(1, push_attempts)
        self._tracker_timeout = tracker_timeout
        self._retry_base_delay = retry_base_delay
        self._queue: asyncio.Queue[_Outgoing] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._metrics = metrics or Metrics()

    @property
    def failed_pushes(self) -> int:
        """Pushes given up after every attempt (read from the metric that counts them)."""
        return self._metrics.push_failures_total()

    async def start(self) -> None:
        if self._sender is None:
            self._sender = asyncio.create_task(self._send_forever(), name="kotlin-push-sender")

    async def stop(self, drain_timeout: float = 10.0) -> None:
        """Send what is queued (bounded), then stop the sender."""
        try:
            await asyncio.wait_for(self._queue.join(), drain_timeout)
        except TimeoutError:
            log.warning("dropping %d unsent Kotlin pushes at shutdown", self._queue.qsize())
        if self._sender is not None:
            self._sender.cancel()
            await asyncio.gather(self._sender, return_exceptions=True)
            self._sender = None

    async def flush(self, timeout: float = 10.0) -> None:
        await asyncio.wait_for(self._queue.join(), timeout)

    def push_progress(self, push: ProgressPush) -> None:
        self._queue.put_nowait(_Outgoing(PROGRESS_PATH, push.wire(), attempts=1))

    def push_status(self, push: StatusPush) -> None:
        self._queue.put_nowait(_Outgoing(STATUS_PATH, push.wire(), attempts=self._push_attempts))

    def push_correction_progress(self, push: CorrectionProgressPush) -> None:
        """Transcript-correction heartbeat (§3.3): like progress, tried once."""
        self._queue.put_nowait(_Outgoing(CORRECTION_PROGRESS_PATH, push.wire(), attempts=1))

    async def _send_forever(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                thread_id, task_id = item.run
                with run_context(thread_id=thread_id or item.body.get("threadId"),
                                 task_id=task_id or item.body.get("taskId")):
                    await self._send(item)
            finally:
                self._queue.task_done()

    async def _send(self, item: _Outgoing) -> None:
        for attempt in range(1, item.attempts + 1):
            try:
                response = await self._http.post(
                    self._base + item.path, json=item.body, timeout=self._push_timeout
                )
                if response.status_code < 500:
                    if response.status_code >= 400:
                        log.warning("Kotlin rejected %s: HTTP %s", item.path, response.status_code)
                    return
                reason = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                reason = f"{type(exc).__name__}: {exc}"
            if attempt < item.attempts:
                await asyncio.sleep(self._retry_base_delay * 2 ** (attempt - 1))
        self._metrics.push_failed(item.path)
        log.warning("push %s failed after %d attempt(s): %s", item.path, item.attempts, reason)

    async def create_issue(self, request: TrackerCreateIssue, *, idempotency_key: str | None = None) -> dict[str, Any]:
        return await self._tracker("/internal/tracker/create-issue", request.wire(), idempotency_key)

    async def update_issue(self, request: TrackerUpdateIssue, *, idempotency_key: str | None = None) -> dict[str, Any]:
        return await self._tracker("/internal/tracker/update-issue", request.wire(), idempotency_key)

    async def _tracker(self, path: str, body: dict[str, Any], idempotency_key: str | None = None) -> dict[str, Any]:
        """`idempotency_key` goes out as `Idempotency-Key`: a repeated call (a crash between the call
        and recording its answer) is recognisable to a tracker that honours the header."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        try:
            response = await self._http.post(self._base + path, json=body, timeout=self._tracker_timeout,
                                             headers=headers)
            response.raise_for_status()
            data = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise TrackerError(f"{path} failed: {exc}") from exc
        return data if isinstance(data, dict) else {"result": data}
