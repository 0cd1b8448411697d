"""What Kotlin and people read about a run: pure projections of the run record.

`/status` answers from one of two sources: a run executing in this process (its record is written
only when a segment ends, so the live percent comes from the run) or the stored record, which is
also what a just-ended run is about to store (`record_of`: /status must not wait for the write).
No I/O here, so every status a run can show is a unit test away.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

from app.llm.budget import describe_nodes, node_usage
from app.persistence.runs import RunRecord
from app.runs.lifecycle import RunIdentity, RunOutcome
from app.schemas.kotlin import status_reply
from app.schemas.runs import NodeUsage, RunSummary, RunUsage
from app.texts.clip import clip

#: Characters of a request's first line kept in its run record.
REQUEST_CHARS = 200


def status_map(thread_id: str, record: RunRecord | None, *, live_percent: float | None = None,
               goals: str = "", agent: str = "") -> dict[str, str]:
    """The `/status` body (strings only: Kotlin decodes `Map<String, String>`).

    `live_percent` is given while the run executes in this process; else `record` decides, and
    no record is `unknown`. `goals` is where each goal of a running plan stands, `agent` what runs
    its latest step (`openhands → aider`).
    """
    if live_percent is not None:
        return status_reply(thread_id, "running", percent=f"{live_percent:g}", **({"goals": goals} if goals else {}),
                            **({"agent": agent} if agent else {}))
    if record is None:
        return status_reply(thread_id, "unknown")
    usage = usage_fields(record.usage)
    match record.status:
        case "running":
            # Either it runs on some pod, or its pod died and recovery adopts it shortly.
            return status_reply(thread_id, "running", percent=f"{record.percent:g}")
        case "interrupted":
            return status_reply(thread_id, "interrupted", interrupt_action=record.interrupt_action or "unknown",
                                interrupt_description=record.interrupt_description or "",
                                percent=f"{record.percent:g}", **usage)
        case "done":
            return status_reply(thread_id, "done", summary=record.summary or "", branch=record.branch or "",
                                artifacts=record.artifacts, percent="100", **usage)
        case _:
            return status_reply(thread_id, "error", error=record.error or "unknown error", report=record.report,
                                branch=record.branch, percent=f"{record.percent:g}", **usage)


class EndedStatuses:
    """The `/status` bodies of ended runs (done or error: they never change again), the most
    recently read `capacity` kept: Kotlin and every console page poll a run after its end too, and
    each poll would otherwise be a store read. Interrupted and running runs are not kept: another
    pod may answer or adopt them."""

    ENDED = frozenset({"done", "error"})

    def __init__(self, capacity: int = 4096) -> None:
        self._capacity = capacity
        self._bodies: OrderedDict[str, dict[str, str]] = OrderedDict()

    def get(self, thread_id: str) -> dict[str, str] | None:
        body = self._bodies.get(thread_id)
        if body is not None:
            self._bodies.move_to_end(thread_id)
        return body

    def keep(self, thread_id: str, body: dict[str, str]) -> dict[str, str]:
        """`body`, kept when it is an ended run's."""
        if body.get("status") in self.ENDED:
            self._bodies[thread_id] = body
            self._bodies.move_to_end(thread_id)
            while len(self._bodies) > self._capacity:
                self._bodies.popitem(last=False)
        return body

    def __len__(self) -> int:
        return len(self._bodies)


def usage_fields(usage: dict[str, Any]) -> dict[str, Any]:
    """LLM totals and the time per node for /status (strings there, like every value); nothing
    when none were recorded."""
    if not usage:
        return {}
    fields = {"llm_tokens": usage.get("tokens", 0), "llm_cost_usd": f"{float(usage.get('cost_usd', 0.0)):.6f}",
              "llm_seconds": usage.get("seconds", 0)}
    if "llm_calls" in usage:
        fields["llm_calls"] = usage["llm_calls"]
    if by_node := describe_nodes(usage):
        fields["time_by_node"] = by_node
    return fields


def record_of(identity: RunIdentity, outcome: RunOutcome) -> RunRecord:
    """The record a just-ended run is about to store (times are the store's to set)."""
    return RunRecord(
        thread_id=identity.thread_id, task_id=identity.task_id, client_id=identity.client_id,
        status=outcome.status, summary=outcome.summary, error=outcome.error,
        interrupt_action=outcome.interrupt_action, interrupt_description=outcome.interrupt_description,
        branch=outcome.branch, artifacts=outcome.artifacts, usage=outcome.usage, percent=outcome.percent,
        report=outcome.report, created_at=0.0, updated_at=0.0,
    )


def run_summary(record: RunRecord) -> RunSummary:
    """A run for `GET /runs`: typed values (unlike /status), ISO-8601 times, null for no text."""
    return RunSummary(
        thread_id=record.thread_id, task_id=record.task_id, client_id=record.client_id, status=record.status,
        percent=record.percent, branch=record.branch or None, summary=record.summary or None,
        error=record.error or None, request=record.request or None,
        waiting=(record.interrupt_action or "unknown") if record.status == "interrupted" else None,
        created_at=_iso(record.created_at), updated_at=_iso(record.updated_at), usage=run_usage(record.usage),
    )


def first_line(text: str, limit: int = REQUEST_CHARS) -> str:
    """A request's first non-empty line, clipped: what a list of runs shows of it."""
    return clip(next((part.strip() for part in text.splitlines() if part.strip()), ""), limit)


def run_usage(usage: dict[str, Any]) -> RunUsage | None:
    """The run's model use and its time per node (None before the first record of it)."""
    if not usage:
        return None
    return RunUsage(
        llm_calls=int(usage.get("llm_calls", 0)), llm_tokens=int(usage.get("tokens", 0)),
        llm_cost_usd=float(usage.get("cost_usd", 0.0)), seconds=float(usage.get("seconds", 0.0)),
        nodes=[NodeUsage(node=node, seconds=float(f["seconds"]), llm_calls=int(f["llm_calls"]),
                         llm_tokens=int(f["llm_tokens"]), llm_seconds=float(f["llm_seconds"]))
               for node, f in node_usage(usage).items()])


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()
