"""Tracker operations of a plan step: carried out at most once, and never claimed when Kotlin only
pretends.

Idempotency. Every operation has a key: task, goal, step, plan revision, the operation's index and
a digest of what it asks (so another plan's operation at the same place is another key). Before
the call the key is written to MongoDB (the context store, scope `tracker`, per task), after it
the answer; a retry, a resume or a replay of the node finds the answer there and calls nothing.
The graph state cannot hold the key in time: a node's writes are checkpointed only when it ends,
and a crash between the call and that end is the case to cover. A crash between the call and
recording its answer leaves the key `pending`; the call is repeated with the same
`Idempotency-Key` header, which a tracker that honours it answers with the issue it already made.

Honesty. Kotlin's tracker endpoints are placeholders today (`{"ok": true, "message": "…placeholder"}`,
docs/api.md, tracker calls): an answer without an issue key created nothing, an update answered
by a placeholder changed nothing. Neither is a failure of the step (nothing the run can fix), but
neither is reported as done: the step summary and the run's report say what was not carried out.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Final, Literal

from app.clients.kotlin import KotlinClient, TrackerError
from app.persistence.context_store import ContextStore
from app.schemas.domain import TrackerOperation
from app.schemas.kotlin import TrackerCreateIssue, TrackerUpdateIssue

SCOPE: Final = "tracker"
Outcome = Literal["created", "updated", "not_created", "not_updated"]


@dataclass(frozen=True)
class TrackerCall:
    """One operation's place in the run: whose, which step, which operation of it."""

    run_id: str
    """The run (its thread): a later request in the same chat plans its own operations."""
    client_id: str
    project_id: str | None
    goal_index: int
    step_index: int
    revision: int
    index: int


@dataclass(frozen=True)
class TrackerResult:
    outcome: Outcome
    issue_key: str | None
    """The created issue, or the updated one."""
    note: str = ""
    """Why nothing was done: what the tracker answered."""

    @property
    def carried_out(self) -> bool:
        return self.outcome in ("created", "updated")


def idempotency_key(call: TrackerCall, op: TrackerOperation) -> str:
    """`tracker:<run>:g<goal>:s<step>:r<revision>:o<index>:<digest>`, stable across attempts and
    processes; the digest covers what the operation asks."""
    asked = json.dumps(op.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(asked.encode()).hexdigest()[:12]
    return (f"tracker:{call.run_id}:g{call.goal_index}:s{call.step_index}:r{call.revision}:o{call.index}:"
            f"{digest}")


async def carry_out(kotlin: KotlinClient, store: ContextStore, call: TrackerCall, op: TrackerOperation,
                    default_title: str) -> TrackerResult:
    """The operation's result: recorded by an earlier run of this node, or from one call to Kotlin.

    Raises TrackerError when Kotlin fails, or when the key cannot be recorded before the call (a
    call whose key is not on record could not be recognised as done later)."""
    key = idempotency_key(call, op)
    try:
        entry = await store.get(call.run_id, SCOPE, key)
    except Exception as exc:
        raise TrackerError(f"{op.op}: the idempotency record cannot be read ({type(exc).__name__}); not calling") \
            from exc
    if entry is not None and entry.detail.get("state") == "done":
        recorded = entry.detail
        return TrackerResult(recorded["outcome"], recorded.get("issue_key"), recorded.get("note", ""))
    if entry is None:
        try:
            await store.save(call.run_id, SCOPE, key, "pending", {"state": "pending", "op": op.op})
        except Exception as exc:
            raise TrackerError(f"{op.op}: the idempotency key cannot be recorded ({type(exc).__name__}); "
                               "not calling") from exc
    result = await _call(kotlin, call, op, key, default_title)
    await store.save_safely(call.run_id, SCOPE, key, result.outcome, {
        "state": "done", "op": op.op, "outcome": result.outcome, "issue_key": result.issue_key, "note": result.note})
    return result


async def _call(kotlin: KotlinClient, call: TrackerCall, op: TrackerOperation, key: str,
                default_title: str) -> TrackerResult:
    if op.op == "create":
        reply = await kotlin.create_issue(TrackerCreateIssue(
            client_id=call.client_id, project_id=call.project_id, title=op.title or default_title,
            description=op.description, type=op.type), idempotency_key=key)
        created = _issue_key(reply)
        return TrackerResult("created", created) if created else TrackerResult("not_created", None, _said(reply))
    reply = await kotlin.update_issue(TrackerUpdateIssue(
        client_id=call.client_id, project_id=call.project_id, issue_key=op.issue_key or "", status=op.status,
        comment=op.comment), idempotency_key=key)
    if reply.get("ok") is True and "placeholder" not in str(reply.get("message") or "").lower():
        return TrackerResult("updated", op.issue_key)
    return TrackerResult("not_updated", op.issue_key, _said(reply))


def _issue_key(reply: dict[str, Any]) -> str | None:
    for name in ("key", "issueKey", "issue_key"):
        value = reply.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _said(reply: dict[str, Any]) -> str:
    message = reply.get("message")
    return str(message)[:200] if message else json.dumps(reply, ensure_ascii=False)[:200]
