"""Where a run stops: a question or gate waiting for the user, or its end.

Three channels can say it (an SSE event, `/status`, a status push) with different shapes; each
becomes the same `Stop`, so the client acts on whichever arrives first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

from app.cli.client import RunStatus
from app.cli.events import SseEvent
from app.schemas.kotlin import StatusPush

StopStatus = Literal["done", "error", "interrupted"]
STOP_EVENTS: dict[str, StopStatus] = {"done": "done", "error": "error", "approval_required": "interrupted"}


@dataclass(frozen=True)
class Interrupt:
    """A question (`clarify`) or an approval gate (commit, push, epic_plan, cloud_model, …)."""

    action: str
    description: str
    branch: str | None = None
    changed_files: tuple[str, ...] = ()

    @property
    def is_clarification(self) -> bool:
        """Kotlin's rule: only `clarify` is a question; every other action is an approval."""
        return self.action == "clarify"

    @classmethod
    def from_payload(cls, payload: dict[str, Any] | None, *, action: str | None = None,
                     description: str | None = None) -> Interrupt:
        payload = payload or {}
        files = payload.get("changed_files")
        return cls(action=str(payload.get("action") or action or "unknown"),
                   description=str(payload.get("description") or description or ""),
                   branch=payload.get("branch") or None,
                   changed_files=tuple(str(f) for f in files) if isinstance(files, list) else ())


@dataclass(frozen=True)
class Stop:
    status: StopStatus
    summary: str | None = None
    error: str | None = None
    report: str | None = None
    branch: str | None = None
    artifacts: tuple[str, ...] = ()
    percent: float | None = None
    interrupt: Interrupt | None = None
    source: str = "stream"
    """Which channel said it: stream, status or push."""


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def from_event(event: SseEvent) -> Stop | None:
    status = STOP_EVENTS.get(event.type)
    if status is None:
        return None
    data = event.data
    artifacts = data.get("artifacts")
    percent = data.get("percent")
    interrupt = Interrupt.from_payload(data.get("interrupt")) if status == "interrupted" else None
    return Stop(status=status, summary=_text(data.get("summary")), error=_text(data.get("error")),
                report=_text(data.get("report")), branch=_text(data.get("branch")),
                artifacts=tuple(str(a) for a in artifacts) if isinstance(artifacts, list) else (),
                percent=float(percent) if isinstance(percent, (int, float)) else None, interrupt=interrupt)


def from_status(status: RunStatus) -> Stop | None:
    """None while the run is running (or not known yet)."""
    if status.status not in ("done", "error", "interrupted"):
        return None
    interrupt = None
    if status.status == "interrupted":
        interrupt = Interrupt.from_payload(None, action=status.interrupt_action,
                                           description=status.interrupt_description)
    return Stop(status=cast(StopStatus, status.status), summary=_text(status.summary), error=_text(status.error),
                report=_text(status.report), branch=_text(status.branch), artifacts=tuple(status.artifact_list),
                percent=status.percent_value, interrupt=interrupt, source="status")


def from_push(push: StatusPush) -> Stop | None:
    if push.status not in ("done", "error", "interrupted"):
        return None
    interrupt = None
    if push.status == "interrupted":
        interrupt = Interrupt.from_payload(None, action=push.interrupt_action,
                                           description=push.interrupt_description)
    return Stop(status=cast(StopStatus, push.status), summary=_text(push.summary), error=_text(push.error),
                branch=_text(push.branch), artifacts=tuple(push.artifacts), interrupt=interrupt, source="push")
