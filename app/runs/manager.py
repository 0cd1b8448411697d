"""RunManager: the start / resume / cancel / status commands and the lifecycle of run tasks.

A run executes holding an admission `Slot` (`app.runs.admission`: this pod's semaphore and a
cluster-wide lock lease); an interrupted run waits for the user holding neither. Crash recovery
(`app.runs.recovery`) hands orphaned runs back through `adopt`; `/status` is projected by
`app.runs.status`. Every terminal outcome is recorded in `orchestrator_runs` and pushed to
Kotlin, under the slot's fencing token: a pod that lost the run to another does neither.

Shutdown and a lost lease suspend a run instead of ending it: its `AgentControl` says so before
the task is cancelled, so runners leave the agent (Kubernetes Job) running for the pod that
adopts the run, and the run stays `running` in MongoDB.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langgraph.pregel import Pregel
from langgraph.types import Command

from app.agents.control import AgentControl, use_control
from app.agents.workspace import WorkspaceError, WorkspaceManager
from app.clients.kotlin import KotlinClient
from app.config import Settings
from app.graph import report
from app.graph.approval import is_approved
from app.graph.nodes._common import run_language
from app.llm.budget import BudgetExceededError, BudgetLimits, BudgetTracker
from app.llm.provider import LlmError
from app.llm.scope import LlmScope, current_scope, scope_for, use_scope
from app.observability.logs import run_context
from app.observability.metrics import Metrics
from app.persistence.outage import MongoOutage, MongoUnavailableError
from app.persistence.runs import RunRecord, RunStore
from app.runs.admission import Admission, Slot
from app.runs.errors import RunConflictError, RunNotFoundError
from app.runs.events import EventHub, EventLog
from app.schemas.thread_ids import new_thread_id, task_id_of
from app.runs.journal import RunJournal
from app.runs.lifecycle import RunDriver, RunIdentity, RunOutcome, RunProgress
from app.runs.status import record_of, run_summary, status_map
from app.schemas.domain import CodingTask
from app.schemas.kotlin import ApprovalResponse, OrchestrateRequest, ProgressPush, StatusPush
from app.schemas.runs import RunList
from app.texts import Texts, texts

log = logging.getLogger(__name__)

#: How long a cancel or crash report may wait for the checkpoint before the error goes out without it.
REPORT_READ_SECONDS = 5.0

#: What ended a run outside its graph, in the run's language (a quoted exception needs no texts).
Problem = Callable[[Texts], str] | str


def _cancelled(t: Texts) -> str:
    return t.cancelled


def _cloud_rejected(t: Texts) -> str:
    return t.cloud_rejected


@dataclass
class ActiveRun:
    identity: RunIdentity
    task: asyncio.Task[RunOutcome] | None = None
    cancel_requested: bool = False
    outcome: RunOutcome | None = None
    """Set once the run ended, was recorded and freed its slot; /status answers from it meanwhile."""
    scope: LlmScope | None = None
    started_at: float = field(default_factory=time.monotonic)
    progress: RunProgress = field(default_factory=RunProgress)
    control: AgentControl = field(default_factory=AgentControl)
    """Read by the runners when the task is cancelled: stop the agent, or leave it for adoption."""
    journal: RunJournal | None = None
    """Writes the run record as the segment goes (creation, usage at node ends, outcome)."""
    language: str = ""
    """The run's language (what intake decides, known before it runs): texts said outside the graph."""


def initial_state(request: OrchestrateRequest, thread_id: str, limits: BudgetLimits | None = None) -> dict[str, Any]:
    task = CodingTask(
        id=request.task_id, client_id=request.client_id, project_id=request.project_id,
        workspace_path=request.workspace_path, query=request.query, agent_preference=request.agent_preference,
    )
    return {
        "thread_id": thread_id,
        "task": task.model_dump(),
        "rules": request.rules.model_dump(),
        "environment": request.environment,
        "jervis_project_id": request.jervis_project_id,
        "client_name": request.client_name,
        "project_name": request.project_name,
        "chat_history": request.chat_history.model_dump() if request.chat_history else None,
        "budget_limits": (limits or BudgetLimits()).merged(BudgetLimits(**request.budget.model_dump()) if request.budget else None)
        .model_dump(),
    }


class RunManager:
    def __init__(
        self,
        *,
        settings: Settings,
        graph: Pregel,
        driver: RunDriver,
        admission: Admission,
        runs: RunStore,
        kotlin: KotlinClient,
        events: EventHub,
        workspaces: WorkspaceManager,
        metrics: Metrics,
        redact: Callable[[str], str] = str,
        outage: MongoOutage | None = None,
    ) -> None:
        self._settings = settings
        self._graph = graph
        self._driver = driver
        self._admission = admission
        self._runs = runs
        self._kotlin = kotlin
        self._events = events
        self._workspaces = workspaces
        self._metrics = metrics
        self._redact = redact
        self._outage = outage
        self._active: dict[str, ActiveRun] = {}

    @property
    def busy(self) -> bool:
        return self._admission.busy

    @property
    def active_count(self) -> int:
        return len(self._active)

    @property
    def accepting(self) -> bool:
        """False once shutdown began: the pod is no longer ready for work."""
        return self._admission.accepting

    # --- commands --------------------------------------------------------------------------

    async def start(self, request: OrchestrateRequest) -> ActiveRun:
        self._workspaces.resolve(request.workspace_path)  # WorkspaceError → 422 before admission
        thread_id = new_thread_id(request.task_id)
        slot = await self._admission.admit(thread_id)
        run = ActiveRun(RunIdentity(thread_id, request.task_id, request.client_id))
        limits = BudgetLimits(max_tokens=self._settings.budget_max_tokens,
                              max_cost_usd=self._settings.budget_max_cost_usd,
                              max_seconds=self._settings.budget_max_seconds)
        state = initial_state(request, thread_id, limits)
        record = RunRecord(thread_id=thread_id, task_id=request.task_id, client_id=request.client_id,
                           status="running", pod_id=self._admission.pod_id, fence=slot.token,
                           language=run_language(state, self._settings), created_at=time.time(),
                           updated_at=time.time())
        self._spawn(run, slot, state, record=record)
        return run

    async def resume(self, thread_id: str, approval: ApprovalResponse) -> ActiveRun | None:
        """Continue a waiting run with the user's answer; None when the answer ended the run."""
        snapshot = await self._graph.aget_state(self._driver.config(thread_id))
        if not snapshot.values:
            raise RunNotFoundError(f"No orchestration {thread_id}")
        if not snapshot.interrupts:
            raise RunConflictError(f"{thread_id} is not waiting for approval")
        resume_value = {"approved": approval.approved, "reason": approval.reason,
                        "modification": approval.modification}
        action = (snapshot.interrupts[0].value or {}).get("action") if snapshot.interrupts else None
        if action == "cloud_model" and not is_approved(resume_value):
            await self._end_waiting(thread_id, _cloud_rejected, known=snapshot.values)
            return None
        slot = await self._admission.admit(thread_id)
        # The run record is the arbiter: only one resume (on any pod) gets past this.
        fields: dict[str, Any] = {"cloud_approved": True} if action == "cloud_model" else {}
        try:
            claimed = await self._runs.transition(thread_id, from_status="interrupted", status="running",
                                                  pod_id=self._admission.pod_id, fence=slot.token,
                                                  interrupt_action=None, interrupt_description=None, **fields)
        except BaseException:
            await slot.release()
            raise
        if not claimed:
            await slot.release()
            raise RunConflictError(f"{thread_id} is not waiting for approval (resumed, cancelled or ended)")
        task = snapshot.values.get("task") or {}
        run = ActiveRun(RunIdentity(thread_id, task.get("id") or task_id_of(thread_id) or thread_id,
                                    task.get("client_id") or ""))
        self._spawn(run, slot, Command(resume=resume_value), known=snapshot.values)
        return run

    async def cancel(self, thread_id: str) -> None:
        run = self._active.get(thread_id)
        if run is not None and run.task is not None:
            run.cancel_requested = True
            run.task.cancel()
            await asyncio.wait({run.task}, timeout=15)
            return
        await self._end_waiting(thread_id, _cancelled)

    async def _end_waiting(self, thread_id: str, problem: Problem, known: dict[str, Any] | None = None) -> None:
        """A run waiting for the user ends without running: record it and tell Kotlin what was
        done before it ended."""
        record = await self._runs.get(thread_id)
        cancelled = problem is _cancelled
        if record is None:
            raise RunNotFoundError(f"No active task for {thread_id}")
        error = self._redact(await self._failure_text(thread_id, problem, known, fallback_language=record.language))
        if not await self._runs.transition(thread_id, from_status="interrupted", status="error", error=error):
            raise RunNotFoundError(f"No active task for {thread_id}")
        self._metrics.orchestration_ended("cancelled" if cancelled else "error")
        await self._kotlin.push_status(StatusPush(task_id=record.task_id, client_id=record.client_id,
                                                  thread_id=thread_id, status="error", error=error))
        self._events.log(thread_id).publish("error", {"error": error})

    async def wait(self, run: ActiveRun) -> RunOutcome:
        assert run.task is not None
        return await asyncio.shield(run.task)

    async def status(self, thread_id: str) -> dict[str, str]:
        """String-only status (Kotlin decodes `Map<String, String>`), see `app.runs.status`."""
        run = self._active.get(thread_id)
        if run is None:
            return status_map(thread_id, await self._runs.get(thread_id))
        if run.outcome is None:
            return status_map(thread_id, None, live_percent=run.progress.percent)
        return status_map(thread_id, record_of(run.identity, run.outcome))

    async def recent(self, limit: int) -> RunList:
        """The latest runs, newest first (`GET /runs`). A run executing here shows its live
        percent (its record trails it by up to a node); one that just ended, its outcome."""
        summaries = []
        for record in await self._runs.recent(limit):
            run = self._active.get(record.thread_id)
            if run is not None and run.outcome is None:
                record = record.model_copy(update={"percent": max(record.percent, run.progress.percent)})
            elif run is not None and run.outcome is not None:
                record = record_of(run.identity, run.outcome).model_copy(
                    update={"created_at": record.created_at, "updated_at": record.updated_at})
            summaries.append(run_summary(record))
        return RunList(runs=summaries)

    # --- adoption (called by app.runs.recovery) -------------------------------------------------

    def runs_here(self, thread_id: str) -> bool:
        return thread_id in self._active

    async def adopt(self, record: RunRecord, slot: Slot) -> bool:
        """Continue a run recovery claimed for this pod from its last checkpoint; the run owns
        `slot` from here on. False when there was nothing to continue (the run is ended instead)."""
        thread_id = record.thread_id
        snapshot = await self._graph.aget_state(self._driver.config(thread_id))
        run = ActiveRun(RunIdentity(thread_id, record.task_id, record.client_id))
        if not snapshot.values:  # died before its first checkpoint: nothing to continue
            self._active[thread_id] = run
            language = record.language or run_language({}, self._settings)
            await self._close(run, slot, RunOutcome(status="error", error=texts(language).run_restarted),
                              self._events.log(thread_id))
            return False
        self._spawn(run, slot, None, known=snapshot.values)
        return True

    # --- run tasks -------------------------------------------------------------------------

    def _spawn(self, run: ActiveRun, slot: Slot, graph_input: Any, *, record: RunRecord | None = None,
               known: dict[str, Any] | None = None) -> None:
        thread_id = run.identity.thread_id
        self._active[thread_id] = run
        run.language = run_language(known or (graph_input if isinstance(graph_input, dict) else {}), self._settings)
        events = self._events.log(thread_id)
        events.open()
        # The task copies the context it is created in: every log line of the run names it.
        with run_context(thread_id=thread_id, task_id=run.identity.task_id):
            run.task = asyncio.create_task(self._execute(run, slot, graph_input, record, known),
                                           name=f"run:{thread_id}")

    async def _execute(self, run: ActiveRun, slot: Slot, graph_input: Any, record: RunRecord | None,
                       known: dict[str, Any] | None) -> RunOutcome:
        use_control(run.control)  # in this task's own context: every runner the graph awaits reads it
        identity = run.identity
        events = self._events.log(identity.thread_id)
        watcher = asyncio.create_task(self._suspend_when_lost(run, slot))
        try:
            run.journal = self._journal(identity, record)  # a new run's record is created off the request path
            scope = await self._scope(identity, graph_input, known, events, run.progress)
            run.scope = scope
            budget = scope.budget
            run.journal.track(lambda: (budget.snapshot() if budget is not None else {}, run.progress.percent))
            run.progress.on_node_end = run.journal.note
            with use_scope(scope):
                outcome = await self._driver.drive(identity, graph_input, events, known, run.progress)
        except MongoUnavailableError as exc:  # the outage outlasted its wait: recovery continues the run
            log.error("suspending %s: %s", identity.thread_id, exc)
            watcher.cancel()
            return await self._suspend(run, slot, events, outage=True)
        except asyncio.CancelledError:
            if not run.cancel_requested:  # shutdown or a lost lease: the run is not over
                watcher.cancel()
                return await self._suspend(run, slot, events)
            outcome = RunOutcome(status="error", percent=run.progress.percent, error=await self._failure_text(
                identity.thread_id, _cancelled, run.progress.values, fallback_language=run.language))
        except (LlmError, WorkspaceError, BudgetExceededError) as exc:  # expected: one line, no traceback
            log.warning("orchestration %s failed: %s", identity.thread_id, exc)
            outcome = RunOutcome(status="error", percent=run.progress.percent, error=await self._failure_text(
                identity.thread_id, f"{type(exc).__name__}: {exc}", run.progress.values,
                fallback_language=run.language))
        except Exception as exc:  # every failure must reach Kotlin as an error status
            log.exception("orchestration %s failed", identity.thread_id)
            outcome = RunOutcome(status="error", percent=run.progress.percent, error=await self._failure_text(
                identity.thread_id, f"{type(exc).__name__}: {exc}", run.progress.values,
                fallback_language=run.language))
        finally:
            watcher.cancel()
        await self._close(run, slot, outcome, events)
        return outcome

    async def _failure_text(self, thread_id: str, problem: Problem, known: dict[str, Any] | None = None, *,
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

    async def _close(self, run: ActiveRun, slot: Slot, outcome: RunOutcome, events: EventLog) -> None:
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
                await self._announce(run.identity, outcome, events)
            else:
                log.error("run %s: this pod lost its lease (taken over, or no heartbeat within the deadline); "
                          "its %s outcome is left unrecorded and unannounced for the run's next owner",
                          run.identity.thread_id, outcome.status)
                self._metrics.orchestration_ended("fenced")
        finally:
            await slot.release()
            events.close()
            self._active.pop(run.identity.thread_id, None)

    async def _suspend(self, run: ActiveRun, slot: Slot, events: EventLog, *, outage: bool = False) -> RunOutcome:
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
            self._active.pop(thread_id, None)
            events.publish("suspended", {"message": message})
            events.close()
        return RunOutcome(status="error", error=message)

    async def _scope(self, identity: RunIdentity, graph_input: Any, known: dict[str, Any] | None,
                     events: EventLog, progress: RunProgress) -> LlmScope:
        """Escalation policy and budget of this segment, continued from earlier segments."""
        values = known or (graph_input if isinstance(graph_input, dict) else {})
        previous = None if isinstance(graph_input, dict) else await self._read_record(identity.thread_id)

        language = run_language(values, self._settings)
        t = texts(language)

        def warn(dimension: str, fraction: float) -> None:
            message = t.budget_warning.format(fraction=f"{fraction:.0%}", dimension=dimension)
            events.publish("budget_warning", {"dimension": dimension, "fraction": round(fraction, 3),
                                              "message": message})
            self._kotlin.push_progress_nowait(ProgressPush(task_id=identity.task_id, client_id=identity.client_id,
                                                           node=current_scope().node, message=message))

        tracker = BudgetTracker(limits=BudgetLimits(**(values.get("budget_limits") or {})),
                                warn_fraction=self._settings.budget_warn_fraction, on_warning=warn, language=language)
        if previous is not None:
            tracker.restore(previous.usage)
            progress.percent = max(progress.percent, previous.percent)
        task = values.get("task") or {}
        return scope_for(values.get("rules") or {}, task.get("query", ""), task_id=identity.task_id,
                         cloud_approved=bool(previous and previous.cloud_approved), budget=tracker)

    async def _read_record(self, thread_id: str) -> RunRecord | None:
        """The record a segment continues from, waiting out a MongoDB outage (up to its deadline)."""
        if self._outage is None:
            return await self._runs.get(thread_id)
        return await self._outage.call(lambda: self._runs.get(thread_id), f"run record of {thread_id}")

    def _journal(self, identity: RunIdentity, create: RunRecord | None = None) -> RunJournal:
        return RunJournal(self._runs, thread_id=identity.thread_id, task_id=identity.task_id,
                          client_id=identity.client_id, pod_id=self._admission.pod_id, outage=self._outage,
                          create=create)

    async def _suspend_when_lost(self, run: ActiveRun, slot: Slot) -> None:
        await slot.lease.lost.wait()
        self._metrics.lock_lost.inc()
        log.error("lost the orchestration lock for %s: suspending the run; its agent is left to the pod "
                  "that takes it over", run.identity.thread_id)
        run.control.suspend("lease lost")
        if run.task is not None:
            run.task.cancel()

    async def _record_outcome(self, run: ActiveRun, outcome: RunOutcome, slot: Slot) -> bool:
        """Store the outcome under the slot's fencing token, after the run's earlier record writes
        (upserted, waiting out a MongoDB outage); whether this pod still owns the run. A write
        that lands proves it; one refused because the record names another token disproves it
        (the run was taken over). When MongoDB cannot be asked, the lease decides: owned unless
        its heartbeats have failed past their deadline."""
        journal = run.journal or self._journal(run.identity)
        written = await journal.finish(
            if_fence=slot.token, status=outcome.status, summary=outcome.summary, error=outcome.error,
            interrupt_action=outcome.interrupt_action, interrupt_description=outcome.interrupt_description,
            branch=outcome.branch, artifacts=outcome.artifacts, usage=outcome.usage, percent=outcome.percent,
            report=outcome.report,
        )
        return slot.holds() if written is None else written

    async def _announce(self, identity: RunIdentity, outcome: RunOutcome, events: EventLog) -> None:
        await self._kotlin.push_status(StatusPush(
            task_id=identity.task_id, client_id=identity.client_id, thread_id=identity.thread_id,
            status=outcome.status, summary=outcome.summary if outcome.status == "done" else None,
            error=outcome.error, interrupt_action=outcome.interrupt_action,
            interrupt_description=outcome.interrupt_description, branch=outcome.branch,
            artifacts=outcome.artifacts,
        ), segment=outcome.interrupt_id or "")
        event_type = {"interrupted": "approval_required"}.get(outcome.status, outcome.status)
        events.publish(event_type, {
            "summary": outcome.summary, "error": outcome.error, "report": outcome.report, "branch": outcome.branch,
            "artifacts": outcome.artifacts, "interrupt": outcome.interrupt, "percent": outcome.percent,
        })

    async def shutdown(self, grace_seconds: float | None = None) -> None:
        """Stop taking work; give running nodes time to reach a checkpoint, then suspend what is
        left: each run's agent is told to stay (`AgentControl`) before its task is cancelled, so
        the pod that adopts the run re-attaches to it."""
        self._admission.stop_accepting()
        runs = [run for run in self._active.values() if run.task is not None]
        if not runs:
            return
        grace = self._settings.shutdown_grace_seconds if grace_seconds is None else grace_seconds
        _, pending = await asyncio.wait([run.task for run in runs if run.task is not None], timeout=grace)
        for run in runs:
            if run.task is not None and run.task in pending:
                run.control.suspend("shutdown")
                run.task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*pending, return_exceptions=True)
