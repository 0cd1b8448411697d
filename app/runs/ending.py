"""How a run segment ends: its outcome recorded under the slot's fencing token, the slot freed,
Kotlin and the stream told; or, on shutdown, a lost lease or a MongoDB outage, the run suspended
(left `running` for recovery). Also the error text of a run that ended outside its graph."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from langgraph.pregel import Pregel

from app.clients.kotlin import KotlinClient
from app.config import Settings
from app.graph.rules import report
from app.graph.run_state import run_language
from app.observability.metrics import Metrics
from app.persistence.outage import MongoOutage
from app.persistence.runs import RunRecord, RunStore
from app.runs.active import ActiveRun, Problem
from app.runs.admission import Slot
from app.runs.events import EventLog
from app.runs.journal import RunJournal
from app.runs.lifecycle import RunDriver, RunIdentity, RunOutcome
from app.schemas.kotlin import StatusPush
from app.texts import texts

log = logging.getLogger(__name__)

#: How long a cancel or crash report may wait for the checkpoint before the error goes out without it.
REPORT_READ_SECONDS = 5.0


class RunEnding:
    """Ends and suspends runs for the run manager; `forget` drops a run from its active table."""

    def __init__(self, *, settings: Settings, graph: Pregel[Any, Any, Any, Any], driver: RunDriver, runs: RunStore,
                 kotlin: KotlinClient, metrics: Metrics, pod_id: str, forget: Callable[[str], None],
                 redact: Callable[[str], str] = str, outage: MongoOutage | None = None) -> None:
        self._settings = settings
        self._graph = graph
        self._driver = driver
        self._runs = runs
        self._kotlin = kotlin
        self._metrics = metrics
        self._pod_id = pod_id
        self._forget = forget
        self._redact = redact
        self._outage = outage

    async def failure_text(self, thread_id: str, problem: Problem, known: dict[str, Any] | None = None, *,
                            fallback_language: str | None = None) -> str:
        """The error of a run that ended outside its graph (cancel, crash): the problem, then
        what was done and is left — from the state the driver saw (a running run) or the last
        checkpoint (a waiting one), read within a deadline — in the run's language (the state's,
        else `fallback_language`, else the configured one)."""
        values = known or {}
        if not values:
            try:
                async with asyncio.timeout(REPORT_READ_SECONDS):
                    values = (await self._graph.aget_state(self._driver.config(thread_id))).values or {}
            except Exception:  # the report is a courtesy; the error must go out anyway
                log.warning("no checkpoint to report on for %s", thread_id, exc_info=True)
        t = texts(run_language(values or {"language": fallback_language}, self._settings))
        return report.error_text(problem if isinstance(problem, str) else problem(t), values, t)


    async def close(self, run: ActiveRun, slot: Slot, outcome: RunOutcome, events: EventLog) -> None:
        """Record the outcome, free the slot, tell Kotlin and the stream; all of it only while
        this pod still owns the run (fencing): the record write is conditional on the slot's
        token, and a pod whose slot was taken over writes, pushes and publishes nothing."""
        if run.scope is not None and run.scope.budget is not None:
            outcome.usage = run.scope.budget.snapshot()
        # What leaves the service (Kotlin, the run record, SSE) may quote a provider error or an
        # agent's log: the same secrets as in the logs are masked.
        for name in ("error", "summary", "interrupt_description", "report"):
            text = getattr(outcome, name)
            if text:
                setattr(outcome, name, self._redact(text))
        try:
            if not slot.lease.lost.is_set() and await self._record_outcome(run, outcome, slot):
                self._metrics.orchestration_ended("cancelled" if run.cancel_requested else outcome.status)
                # Free the slots before anyone hears the run ended (Kotlin's push, /status reading
                # `run.outcome`): the next task is dispatched at once and must not meet a 429.
                await slot.release()
                run.outcome = outcome
                # The record stays `announced: false`: recovery's sweep finds the status in the
                # outbox and marks it, off the run's path (one write per sweep, not per run).
                await self._announce(run.identity, outcome, events)
            else:
                log.error("run %s: this pod lost its lease (taken over, or no heartbeat within the deadline); "
                          "its %s outcome is left unrecorded and unannounced for the run's next owner",
                          run.identity.thread_id, outcome.status)
                self._metrics.orchestration_ended("fenced")
        finally:
            await slot.release()
            events.close()
            self._forget(run.identity.thread_id)


    async def suspend(self, run: ActiveRun, slot: Slot, events: EventLog, *, outage: bool = False) -> RunOutcome:
        """Leave the run `running` in MongoDB and free its slot: recovery (this pod after a
        restart, or any other pod) continues it from its last checkpoint, re-attaching to an
        agent Job left running. Kotlin hears nothing, so the task is not failed for a deployment."""
        thread_id = run.identity.thread_id
        t = texts(run.language)
        message = t.run_suspended_outage if outage else t.run_suspended
        log.warning("suspending %s (%s): it will be resumed from its last checkpoint", thread_id,
                    run.control.reason or "cancelled")
        self._metrics.orchestration_ended("suspended")
        try:
            if run.journal is not None:  # the usage so far, for the segment that continues the run
                await run.journal.flush()
            await slot.release()
        finally:
            self._forget(thread_id)
            events.publish("suspended", {"message": message})
            events.close()
        return RunOutcome(status="error", error=message)


    def journal(self, identity: RunIdentity) -> RunJournal:
        return RunJournal(self._runs, thread_id=identity.thread_id, task_id=identity.task_id,
                          client_id=identity.client_id, pod_id=self._pod_id, outage=self._outage)


    async def _record_outcome(self, run: ActiveRun, outcome: RunOutcome, slot: Slot) -> bool:
        """Store the outcome under the slot's fencing token, after the run's earlier record writes
        (upserted, waiting out a MongoDB outage); whether this pod still owns the run. A write
        that lands proves it; one refused because the record names another token disproves it
        (the run was taken over). When MongoDB cannot be asked, the lease decides: owned unless
        its heartbeats have failed past their deadline."""
        journal = run.journal or self.journal(run.identity)
        written = await journal.finish(
            if_fence=slot.token, status=outcome.status, summary=outcome.summary, error=outcome.error,
            interrupt_action=outcome.interrupt_action, interrupt_description=outcome.interrupt_description,
            branch=outcome.branch, artifacts=outcome.artifacts, usage=outcome.usage, percent=outcome.percent,
            report=outcome.report, interrupt_id=outcome.interrupt_id, announced=False, pending=None,
        )
        return slot.holds() if written is None else written

    async def unannounced(self, records: list[RunRecord]) -> list[RunRecord]:
        """Of these ended runs not marked announced, the ones whose status push is not in the
        outbox (a crash came between the outcome write and the push); the others are marked."""
        stored = await self._kotlin.stored_statuses([(_status_push(r, r), r.interrupt_id or "") for r in records])
        await self._runs.mark_announced(sorted(stored))
        return [record for record in records if record.thread_id not in stored]

    async def reannounce(self, record: RunRecord) -> None:
        """Push the status of an ended run whose announcement a crash lost, from its record."""
        log.warning("announcing the %s outcome of %s, lost by a crash before its status push", record.status,
                    record.thread_id)
        await self._kotlin.push_status(_status_push(record, record), segment=record.interrupt_id or "")
        self._metrics.runs_reannounced.inc()
        try:
            await self._runs.mark_announced([record.thread_id])
        except Exception:  # the next sweep finds the push in the outbox and marks it then
            log.warning("could not mark %s announced", record.thread_id, exc_info=True)

    async def _announce(self, identity: RunIdentity, outcome: RunOutcome, events: EventLog) -> None:
        await self._kotlin.push_status(_status_push(identity, outcome), segment=outcome.interrupt_id or "")
        event_type = {"interrupted": "approval_required"}.get(outcome.status, outcome.status)
        events.publish(event_type, {
            "summary": outcome.summary, "error": outcome.error, "report": outcome.report, "branch": outcome.branch,
            "artifacts": outcome.artifacts, "interrupt": outcome.interrupt, "percent": outcome.percent,
        })


def _status_push(identity: RunIdentity | RunRecord, ended: RunOutcome | RunRecord) -> StatusPush:
    """What Kotlin hears of an ended run, from its outcome or (recovery) its record; a summary
    only with `done`."""
    return StatusPush(
        task_id=identity.task_id, client_id=identity.client_id, thread_id=identity.thread_id, status=ended.status,
        summary=ended.summary if ended.status == "done" else None, error=ended.error,
        interrupt_action=ended.interrupt_action, interrupt_description=ended.interrupt_description,
        branch=ended.branch, artifacts=ended.artifacts,
    )
