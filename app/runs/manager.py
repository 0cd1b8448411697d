"""RunManager: the start / resume / cancel / status commands and the lifecycle of run tasks.

A run executes holding an admission `Slot` (`app.runs.admission`: this pod's semaphore and a
cluster-wide lock lease); an interrupted run waits for the user holding neither. Crash recovery
(`app.runs.crash_recovery`) hands orphaned runs back through `adopt`; `/status` is projected by
`app.runs.status`. Every terminal outcome is recorded in `orchestrator_runs` and pushed to
Kotlin, under the slot's fencing token: a pod that lost the run to another does neither.

Shutdown and a lost lease suspend a run instead of ending it: its `AgentControl` says so before
the task is cancelled, so runners leave the agent (Kubernetes Job) running for the pod that
adopts the run, and the run stays `running` in MongoDB.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from langgraph.pregel import Pregel

from app.agents.control import use_control
from app.agents.workspace import WorkspaceError, WorkspaceManager
from app.clients.kotlin import KotlinClient
from app.config import Settings
from app.graph.rules.approval import is_approved
from app.graph.run_state import run_language
from app.llm.budget import BudgetExceededError
from app.llm.health import ProviderHealth
from app.llm.provider import LlmError
from app.llm.scope import use_scope
from app.llm.tiers import Tier
from app.observability.logs import run_context
from app.observability.metrics import Metrics
from app.persistence.outage import MongoOutage, MongoUnavailableError
from app.persistence.redacting_serde import redact_tree
from app.persistence.runs import RunRecord, RunStore
from app.runs.active import ActiveRun, Problem, cancelled, cancelled_leaving, cloud_rejected
from app.runs.admission import Admission, Slot
from app.runs.dispatch_workspace import check_workspace
from app.runs.ending import RunEnding
from app.runs.errors import RunBusyError, RunConflictError, RunNotFoundError
from app.runs.events import EventHub
from app.runs.lifecycle import RunDriver, RunIdentity, RunOutcome
from app.runs.resume import answered, resume_command
from app.runs.segment import default_limits, initial_state, restartable_request, segment_scope
from app.runs.status import EndedStatuses, first_line, record_of, status_map
from app.schemas.kotlin import ApprovalResponse, OrchestrateRequest, StatusPush
from app.schemas.thread_ids import new_thread_id, task_id_of
from app.texts import texts

log = logging.getLogger(__name__)


class RunManager:
    def __init__(
        self,
        *,
        settings: Settings,
        graph: Pregel[Any, Any, Any, Any],
        driver: RunDriver,
        admission: Admission,
        runs: RunStore,
        kotlin: KotlinClient,
        events: EventHub,
        workspaces: WorkspaceManager,
        metrics: Metrics,
        redact: Callable[[str], str] = str,
        outage: MongoOutage | None = None,
        llm_health: ProviderHealth | None = None,
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
        self._llm_health = llm_health
        self._active: dict[str, ActiveRun] = {}
        self._ended = EndedStatuses()
        self._answering: set[str] = set()
        """Threads an answer is being taken for on this pod right now (a second one is refused)."""
        self._ending = RunEnding(settings=settings, graph=graph, driver=driver, runs=runs, kotlin=kotlin,
                                 metrics=metrics, pod_id=admission.pod_id, forget=self._forget, redact=redact,
                                 outage=outage)

    def _forget(self, thread_id: str) -> None:
        run = self._active.pop(thread_id, None)
        if run is not None and run.outcome is not None:  # recorded by this pod: /status needs no read
            self._ended.keep(thread_id, status_map(thread_id, record_of(run.identity, run.outcome)))

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
        check_workspace(self._workspaces, request)  # WorkspaceError → 422 before admission
        thread_id = new_thread_id(request.task_id)
        slot = await self._admission.admit(thread_id)
        run = ActiveRun(RunIdentity(thread_id, request.task_id, request.client_id))
        state = initial_state(request, response_language=self._settings.response_language,
                              limits=default_limits(self._settings))
        record = RunRecord(thread_id=thread_id, task_id=request.task_id, client_id=request.client_id,
                           status="running", pod_id=self._admission.pod_id, fence=slot.token,
                           language=run_language(state, self._settings), request=first_line(request.query),
                           pending=redact_tree(request.model_dump(mode="json", exclude_none=True), self._redact),
                           created_at=time.time(),
                           updated_at=time.time())
        try:  # durable before the 200: a pod that dies right after it leaves a run recovery ends or continues
            await self._runs.create(record)
            offline = await self._model_offline(request, run_language(state, self._settings))
        except BaseException:
            await slot.release()
            raise
        if offline:  # said at once, instead of at the run's first model call
            self._active[thread_id] = run
            self._events.log(thread_id).open()
            run.task = asyncio.create_task(self._refuse(run, slot, offline), name=f"run:{thread_id}")
            return run
        self._spawn(run, slot, state)
        return run

    async def _refuse(self, run: ActiveRun, slot: Slot, error: str) -> RunOutcome:
        """End an accepted run that cannot start, with the status that says why."""
        outcome = RunOutcome(status="error", error=error)
        await self._ending.close(run, slot, outcome, self._events.log(run.identity.thread_id))
        return outcome

    async def _model_offline(self, request: OrchestrateRequest, language: str) -> str | None:
        """Why no run can start now: the local model is OFFLINE (unreachable) and the request's rules
        allow no cloud model; None otherwise (a failing but reachable model is the run's to meet, and a
        BUSY one — serving another client — takes the run's calls in turn: never refused)."""
        rules = request.rules
        if self._llm_health is None or rules.auto_use_anthropic or rules.auto_use_openai or rules.auto_use_gemini:
            return None
        local = await self._llm_health.tier(Tier.LOCAL_FAST)
        if local.get("mode") != "OFFLINE":
            return None
        return texts(language).local_model_offline.format(model=local.get("model"), detail=local.get("detail"))

    async def resume(self, thread_id: str, approval: ApprovalResponse) -> ActiveRun | None:
        """Continue a waiting run with the user's answer; None when the answer ended the run.
        One answer per question: a second one (a retry, a double click, another client) gets
        `RunAnsweredError` (409) with the answer that was taken, never 429."""
        if thread_id in self._answering or thread_id in self._active:  # being answered, or running, here
            raise answered(thread_id, await self._runs.get(thread_id))
        self._answering.add(thread_id)
        try:
            return await self._resume(thread_id, approval)
        finally:
            self._answering.discard(thread_id)

    async def _resume(self, thread_id: str, approval: ApprovalResponse) -> ActiveRun | None:
        snapshot = await self._graph.aget_state(self._driver.config(thread_id))
        if not snapshot.values:
            raise RunNotFoundError(f"No orchestration {thread_id}")
        record = await self._runs.get(thread_id)
        if record is not None and record.status != "interrupted" and record.answer:
            raise answered(thread_id, record)
        if not snapshot.interrupts:
            raise RunConflictError(f"{thread_id} is not waiting for approval")
        resume_value = {"approved": approval.approved, "reason": approval.reason,
                        "modification": approval.modification}
        action = (snapshot.interrupts[0].value or {}).get("action") if snapshot.interrupts else None
        answer = {"interrupt_id": snapshot.interrupts[0].id, "interrupt_action": action,
                  "approved": is_approved(resume_value), "answered_at": time.time(), "pod_id": self._admission.pod_id}
        if action == "cloud_model" and not is_approved(resume_value):
            await self._end_waiting(thread_id, cloud_rejected, known=snapshot.values, answer=answer)
            return None
        try:
            slot = await self._admission.admit(thread_id)
        except RunBusyError:
            if await self._admission.holder(thread_id):  # another pod took an answer to it just now
                raise answered(thread_id, await self._runs.get(thread_id)) from None
            raise
        # The run record is the arbiter: only one resume (on any pod) gets past this.
        fields: dict[str, Any] = {"cloud_approved": True} if action == "cloud_model" else {}
        try:
            claimed = await self._runs.transition(thread_id, from_status="interrupted", status="running",
                                                  pod_id=self._admission.pod_id, fence=slot.token,
                                                  interrupt_action=None, interrupt_description=None, answer=answer,
                                                  **fields)
        except BaseException:
            await slot.release()
            raise
        if not claimed:
            await slot.release()
            raise answered(thread_id, await self._runs.get(thread_id))
        task = snapshot.values.get("task") or {}
        run = ActiveRun(RunIdentity(thread_id, task.get("id") or task_id_of(thread_id) or thread_id,
                                    task.get("client_id") or ""))
        self._spawn(run, slot, resume_command(snapshot.interrupts, resume_value), known=snapshot.values)
        return run

    async def cancel(self, thread_id: str) -> None:
        run = self._active.get(thread_id)
        if run is not None and run.task is not None:
            run.cancel_requested = True
            run.control.cancel()  # runners stop their agent at their next poll, whatever the graph does
            run.task.cancel()
            await asyncio.wait({run.task}, timeout=15)
            return
        record = await self._runs.get(thread_id)
        if record is not None and record.status == "running" and await self._admission.request_cancel(thread_id):
            log.info("cancel of %s passed to pod %s through its lock slot", thread_id, record.pod_id)
            return  # the pod that runs it cancels it at its next lock heartbeat
        await self._end_waiting(thread_id, cancelled)

    async def _end_waiting(self, thread_id: str, problem: Problem, known: dict[str, Any] | None = None,
                           answer: dict[str, Any] | None = None) -> None:
        """A run waiting for the user ends without running: record it and tell Kotlin what was
        done before it ended."""
        record = await self._runs.get(thread_id)
        by_user = problem is cancelled
        if record is None:
            raise RunNotFoundError(f"No active task for {thread_id}")
        error = self._redact(await self._ending.failure_text(thread_id, problem, known,
                                                             fallback_language=record.language))
        taken = {"answer": answer} if answer else {}
        if not await self._runs.transition(thread_id, from_status="interrupted", status="error", error=error,
                                           interrupt_id=None, announced=False, **taken):
            raise RunNotFoundError(f"No active task for {thread_id}")
        self._metrics.orchestration_ended("cancelled" if by_user else "error")
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
            return self._ended.get(thread_id) or self._ended.keep(
                thread_id, status_map(thread_id, await self._runs.get(thread_id)))
        if run.outcome is None:
            return status_map(thread_id, None, live_percent=run.progress.percent, agent=run.progress.agent,
                              goals=run.progress.goal_states(texts(run_language(run.progress.values, self._settings))))
        return status_map(thread_id, record_of(run.identity, run.outcome))

    def live(self, thread_id: str) -> ActiveRun | None:
        """The run when it executes (or just ended) in this process."""
        return self._active.get(thread_id)

    # --- adoption (called by app.runs.crash_recovery) -------------------------------------------------

    def runs_here(self, thread_id: str) -> bool:
        return thread_id in self._active

    async def unannounced(self, records: list[RunRecord]) -> list[RunRecord]:
        return await self._ending.unannounced(records)

    async def reannounce(self, record: RunRecord) -> None:
        await self._ending.reannounce(record)

    async def adopt(self, record: RunRecord, slot: Slot) -> bool:
        """Continue a run recovery claimed for this pod from its last checkpoint; the run owns
        `slot` from here on. False when there was nothing to continue (the run is ended instead)."""
        thread_id = record.thread_id
        snapshot = await self._graph.aget_state(self._driver.config(thread_id))
        run = ActiveRun(RunIdentity(thread_id, record.task_id, record.client_id))
        request = None if snapshot.values else restartable_request(record)
        if request is not None:  # died before its first checkpoint: started again from its request, once
            await self._runs.update(thread_id, if_fence=slot.token, restarts=record.restarts + 1)
            log.warning("starting %s again from its stored request (no checkpoint to continue)", thread_id)
        elif not snapshot.values:
            self._active[thread_id] = run
            language = record.language or run_language({}, self._settings)
            await self._ending.close(run, slot, RunOutcome(status="error", error=texts(language).run_restarted),
                                     self._events.log(thread_id))
            return False
        self._metrics.runs_adopted.inc()
        self._spawn(run, slot, request and initial_state(request, response_language=self._settings.response_language,
                                                         limits=default_limits(self._settings)),
                    known=snapshot.values or None)
        return True

    # --- run tasks -------------------------------------------------------------------------

    def _spawn(self, run: ActiveRun, slot: Slot, graph_input: Any, *, known: dict[str, Any] | None = None) -> None:
        thread_id = run.identity.thread_id
        self._active[thread_id] = run
        run.language = run_language(known or (graph_input if isinstance(graph_input, dict) else {}), self._settings)
        events = self._events.log(thread_id)
        events.open()
        # The task copies the context it is created in: every log line of the run names it.
        with run_context(thread_id=thread_id, task_id=run.identity.task_id):
            run.task = asyncio.create_task(self._execute(run, slot, graph_input, known), name=f"run:{thread_id}")

    async def _execute(self, run: ActiveRun, slot: Slot, graph_input: Any, known: dict[str, Any] | None) -> RunOutcome:
        use_control(run.control)  # in this task's own context: every runner the graph awaits reads it
        identity = run.identity
        events = self._events.log(identity.thread_id)
        watcher = asyncio.create_task(self._watch_lease(run, slot))
        try:
            run.journal = self._ending.journal(identity)  # the record exists: written before the dispatch's 200
            values = known or (graph_input if isinstance(graph_input, dict) else {})
            previous = None if isinstance(graph_input, dict) else await self._read_record(identity.thread_id)
            scope = segment_scope(settings=self._settings, kotlin=self._kotlin, identity=identity, values=values,
                                  previous=previous, events=events, progress=run.progress)
            run.scope = scope
            budget = scope.budget
            run.journal.track(lambda: (budget.snapshot() if budget is not None else {}, run.progress.percent))
            run.progress.on_node_end = run.journal.note
            with use_scope(scope):
                outcome = await self._driver.drive(identity, graph_input, events, known, run.progress)
        except MongoUnavailableError as exc:  # the outage outlasted its wait: recovery continues the run
            log.error("suspending %s: %s", identity.thread_id, exc)
            watcher.cancel()
            return await self._ending.suspend(run, slot, events, outage=True)
        except asyncio.CancelledError:
            if not run.cancel_requested:  # shutdown or a lost lease: the run is not over
                watcher.cancel()
                return await self._ending.suspend(run, slot, events)
            outcome = RunOutcome(status="error", percent=run.progress.percent, error=await self._ending.failure_text(
                identity.thread_id, cancelled_leaving(run.control), run.progress.values,
                fallback_language=run.language))
        except (LlmError, WorkspaceError, BudgetExceededError) as exc:  # expected: one line, no traceback
            log.warning("orchestration %s failed: %s", identity.thread_id, exc)
            # Their messages are written for the user (a spent budget in the run's language): no class name.
            outcome = RunOutcome(status="error", percent=run.progress.percent, error=await self._ending.failure_text(
                identity.thread_id, str(exc), run.progress.values, fallback_language=run.language))
        except Exception as exc:  # every failure must reach Kotlin as an error status
            log.exception("orchestration %s failed", identity.thread_id)
            outcome = RunOutcome(status="error", percent=run.progress.percent, error=await self._ending.failure_text(
                identity.thread_id, f"{type(exc).__name__}: {exc}", run.progress.values,
                fallback_language=run.language))
        finally:
            watcher.cancel()
        await self._ending.close(run, slot, outcome, events)
        return outcome

    async def _read_record(self, thread_id: str) -> RunRecord | None:
        """The record a segment continues from, waiting out a MongoDB outage (up to its deadline)."""
        if self._outage is None:
            return await self._runs.get(thread_id)
        return await self._outage.call(lambda: self._runs.get(thread_id), f"run record of {thread_id}")

    async def _watch_lease(self, run: ActiveRun, slot: Slot) -> None:
        """Stop the run when its lease is lost (suspended for the new owner) or when a /cancel that
        reached another pod marked its lock slot (cancelled like a cancel here)."""
        lost = asyncio.create_task(slot.lease.lost.wait())
        asked = asyncio.create_task(slot.lease.cancel_requested.wait())
        try:
            await asyncio.wait({lost, asked}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            lost.cancel()
            asked.cancel()
        if not slot.lease.lost.is_set():
            log.info("cancel of %s requested through its lock slot", run.identity.thread_id)
            run.cancel_requested = True
            run.control.cancel()
            if run.task is not None:
                run.task.cancel()
            return
        self._metrics.lock_lost.inc()
        log.error("lost the orchestration lock for %s: suspending the run; its agent is left to the pod "
                  "that takes it over", run.identity.thread_id)
        run.control.suspend("lease lost")
        if run.task is not None:
            run.task.cancel()

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
        await asyncio.gather(*pending, return_exceptions=True)  # each run task logs its own end
