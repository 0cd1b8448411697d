"""Pushes to the Kotlin server (`docs/api.md`, pushes to Kotlin) and its tracker calls.

A push is stored in the MongoDB outbox (`OutboxWriter`, in production order; a status before the
producing step goes on, a node's progress while the node runs) and delivered by `DeliveryService`
only once stored, so a graph node never waits for Kotlin and nothing a run reported is lost when
Kotlin is down or the pod dies. This module decides what a push is: its body, masked
by `redact` (the one place pushes are redacted), and its identity. A status push is identified by
thread, status and, for `interrupted`, the interrupt's id (stable when a crash replay re-produces
it, new for a later interrupt of the same thread): stored once, sent at least once. Progress pushes
of a task, and correction progress of a meeting, share one slot that keeps the latest.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from app.clients.outbox import OutboxWriter
from app.observability.logs import current_run
from app.persistence.outbox import OutboxItem
from app.schemas.correction import CorrectionProgressPush
from app.schemas.kotlin import ProgressPush, StatusPush, TrackerCreateIssue, TrackerUpdateIssue

log = logging.getLogger(__name__)

PROGRESS_PATH = "/internal/orchestrator-progress"
STATUS_PATH = "/internal/orchestrator-status"
CORRECTION_PROGRESS_PATH = "/internal/correction-progress"


class TrackerError(RuntimeError):
    """The Kotlin tracker endpoint failed."""


def _same(text: str) -> str:
    return text


def redact_strings(value: Any, redact: Callable[[str], str]) -> Any:
    """`value` with `redact` applied to every string inside it (keys are field names, kept)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_strings(v, redact) for v in value]
    if isinstance(value, dict):
        return {k: redact_strings(v, redact) for k, v in value.items()}
    return value


def status_identity(push: StatusPush, segment: str = "") -> str:
    """`done` and `error` end a thread once; `interrupted` recurs, one identity per interrupt."""
    identity = f"status:{push.thread_id}:{push.status}"
    return f"{identity}:{segment}" if segment else identity


class KotlinClient:
    def __init__(
        self,
        http: httpx.AsyncClient,
        base_url: str,
        outbox: OutboxWriter,
        *,
        redact: Callable[[str], str] = _same,
        tracker_timeout: float = 30.0,
    ) -> None:
        self._http = http
        self._base = base_url.rstrip("/")
        self._outbox = outbox
        self._redact = redact
        self._tracker_timeout = tracker_timeout

    async def push_progress(self, push: ProgressPush) -> None:
        await self._outbox.put(self._progress(push))

    def push_progress_nowait(self, push: ProgressPush) -> None:
        """For synchronous callbacks (the budget warning): stored behind what is already queued."""
        self._outbox.put_nowait(self._progress(push))

    async def push_status(self, push: StatusPush, *, segment: str = "") -> None:
        """`segment` tells recurring statuses apart (the interrupt id of an `interrupted`)."""
        if push.status == "interrupted" and not segment:
            segment = uuid.uuid4().hex  # no stable marker: never deduplicated rather than lost
            log.warning("interrupted status of %s without an interrupt id", push.thread_id)
        await self._outbox.put(self._item(status_identity(push, segment), f"task:{push.task_id}", "status",
                                          STATUS_PATH, push.wire()))

    async def stored_statuses(self, pushes: list[tuple[StatusPush, str]]) -> set[str]:
        """The thread ids of these (push, segment) pairs whose status is already in the outbox."""
        identities = {status_identity(push, segment): push.thread_id for push, segment in pushes}
        return {identities[found] for found in await self._outbox.stored(list(identities))}

    async def push_correction_progress(self, push: CorrectionProgressPush) -> None:
        """Transcript-correction heartbeat (§3.3), the latest per meeting."""
        await self._outbox.put(self._correction(push))

    def push_correction_progress_nowait(self, push: CorrectionProgressPush) -> None:
        """For the model's token callback (synchronous) while a chunk streams."""
        self._outbox.put_nowait(self._correction(push))

    def _progress(self, push: ProgressPush) -> OutboxItem:
        return self._item(f"progress:{push.task_id}", f"task:{push.task_id}", "progress", PROGRESS_PATH, push.wire())

    def _correction(self, push: CorrectionProgressPush) -> OutboxItem:
        return self._item(f"correction:{push.meeting_id}", f"meeting:{push.meeting_id}", "progress",
                          CORRECTION_PROGRESS_PATH, push.wire())

    def _item(self, identity: str, order_key: str, kind: str, path: str, body: dict[str, Any]) -> OutboxItem:
        thread_id, task_id = current_run()  # delivery logs name the run that produced the push
        return OutboxItem.model_validate({
            "id": identity, "order_key": order_key, "kind": kind, "path": path,
            "body": redact_strings(body, self._redact), "thread_id": thread_id or body.get("threadId"),
            "task_id": task_id or body.get("taskId")})

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
