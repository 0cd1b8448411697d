"""Kubernetes Job runner: one Job per step (spec §10).

Completion is decided from the Job's status (a watch wakes the runner, polling backs it up),
never from the log stream; logs are streamed to the service log and the run's events as they
come. Job names are deterministic, so after an orchestrator restart the runner re-attaches to a
Job that still runs. Every Job, its pod and its log are in `AGENT_NAMESPACE` (the API facade's
namespace), never the orchestrator's own. Cancel and timeout delete the Job with Background propagation, except when
the run is being suspended (shutdown, lost lease: `app.agents.control`): then the Job is left
running for the pod that adopts the run, which re-attaches to it by its name.

Every wait on the cluster has a deadline (settings `K8S_CAPACITY_WAIT_SECONDS`,
`K8S_START_TIMEOUT_SECONDS`, `K8S_DELETE_TIMEOUT_SECONDS`, and the agent's own timeout) and ends
in a `KubernetesWaitError` naming what it awaited and for how long: a wait before the Job exists
fails the attempt with it; a Job that does not start or never finishes is deleted and its attempt
judged failed with that message. The progress watchdog (`stall`) deletes the Job of an agent that
neither logs nor changes the workspace (on the shared volume) for `AGENT_STALL_SECONDS` after its
pod started, and fails the attempt with a "Stalled:" summary.

A delete that fails is retried (`job_delete`); one that never succeeds is logged, counted
(`jervis_agent_jobs_not_deleted_total`) and said: on a stopped attempt in its result
(`AgentResult.not_stopped`), on a cancel in the run's `AgentControl`, for the run's end; before a
new attempt it fails that attempt (it must not start beside the old one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable

from app.agents.base import AgentJob, AgentResult, LogSink, Prepare, StopFailure
from app.agents.control import cancel_requested, report_not_stopped, should_detach
from app.agents.job_delete import DeleteRetry, delete_job
from app.agents.job_spec import APP_LABEL, build_job, job_name, label_value, step_label
from app.agents.k8s_client import (
    KubernetesApi,
    KubernetesError,
    LogStream,
    fatal_pod_problem,
    job_failure_reason,
    job_finished,
    pod_started,
    pod_summary,
)
from app.agents.outcome import judge
from app.agents.stall import StallWatch
from app.agents.workspace import ResultFileError, WorkspaceManager
from app.config import Settings
from app.observability.metrics import Metrics

log = logging.getLogger(__name__)

TAIL_LINES = 60


class KubernetesWaitError(TimeoutError):
    """A wait on the cluster passed its deadline: says what was awaited, for how long, and what was seen last."""

    def __init__(self, awaited: str, seconds: float, last_seen: str) -> None:
        super().__init__(f"waited {seconds:g} s for {awaited} ({last_seen})")
        self.awaited = awaited
        self.seconds = seconds


class AgentCapacityTimeoutError(KubernetesWaitError):
    """No agent slot of the step's type freed up (in this pod or among the namespace's Jobs)."""


class JobStartTimeoutError(KubernetesWaitError):
    """The Job's pod never started its container (unschedulable, image still pulling, refused by a quota)."""


class JobNotFinishedError(KubernetesWaitError):
    """The Job got no final condition by the agent's timeout plus the start allowance."""


class JobDeletionTimeoutError(KubernetesWaitError):
    """A deleted Job still exists (a finalizer or a pod that will not terminate)."""


class KubernetesJobRunner:
    def __init__(self, api: KubernetesApi, workspaces: WorkspaceManager, settings: Settings, *,
                 metrics: Metrics | None = None, delete_retry: DeleteRetry | None = None) -> None:
        if api.namespace != settings.agent_namespace:  # Jobs, their pods and logs all live in the agents' one
            raise ValueError(f"the Job runner's API works in namespace {api.namespace}, the Jobs belong in "
                             f"AGENT_NAMESPACE {settings.agent_namespace}")
        if settings.agent_namespace == settings.k8s_namespace:
            log.warning("agent Jobs run in the orchestrator's own namespace %s: set AGENT_NAMESPACE to the agents' "
                        "namespace (docs/deployment.md, The agents' namespace)", settings.agent_namespace)
        self._api = api
        self._metrics = metrics
        self._delete_retry = delete_retry or DeleteRetry()
        self._workspaces = workspaces
        self._settings = settings
        self._local_slots: dict[str, asyncio.Semaphore] = {}

    def program(self, agent_type: str) -> str:
        """A Job runs the type's own image, so the type names its program."""
        return agent_type

    async def run(self, job: AgentJob, *, prepare: Prepare, on_log: LogSink | None = None) -> AgentResult:
        name = job_name(job)
        slot_deadline = asyncio.get_running_loop().time() + self._settings.k8s_capacity_wait_seconds
        async with self._agent_slot(job.agent_type, slot_deadline):
            existing = await self._api.read_job(name)
            if existing is not None and job_finished(existing) and not self._has_result(job):
                # Finished, but its result is gone (cleaned up before the node was checkpointed).
                await self._delete_or_fail(name, job)
                await self._wait_gone(name)
                existing = None
            if existing is None:
                await self._retire_other_attempts(job, name)
                await self._wait_for_capacity(job.agent_type, slot_deadline)
                await prepare()
                if await self._api.create_job(build_job(self._settings, job)) is None:
                    log.info("Job %s already exists: attaching to it", name)
            else:
                log.info("re-attaching to Job %s", name)
            return await self._follow(name, job, on_log)

    @contextlib.asynccontextmanager
    async def _agent_slot(self, agent: str, deadline: float) -> AsyncIterator[None]:
        """Per-agent limit in this process (the cluster-wide count is checked before creating)."""
        limit = self._settings.agent_concurrency.get(agent, 1)
        slot = self._local_slots.setdefault(agent, asyncio.Semaphore(limit))
        try:
            async with asyncio.timeout_at(deadline):
                await slot.acquire()
        except TimeoutError:
            raise AgentCapacityTimeoutError(
                f"a free {agent} slot in this pod", self._settings.k8s_capacity_wait_seconds,
                f"{limit} {agent} agent(s) of this pod still running, limit {limit}") from None
        try:
            yield
        finally:
            slot.release()

    async def _wait_for_capacity(self, agent: str, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        limit = self._settings.agent_concurrency.get(agent, 1)
        selector = f"app={APP_LABEL},agent-type={label_value(agent)}"
        while True:
            active = [j for j in await self._api.list_jobs(selector) if not job_finished(j)]
            if len(active) < limit:
                return
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AgentCapacityTimeoutError(
                    f"a free {agent} slot among the Jobs of namespace {self._api.namespace}",
                    self._settings.k8s_capacity_wait_seconds, f"{len(active)} {agent} Job(s) running, limit {limit}")
            log.info("%d %s Jobs running (limit %d): waiting", len(active), agent, limit)
            await asyncio.sleep(min(self._settings.k8s_poll_seconds, remaining))

    async def _retire_other_attempts(self, job: AgentJob, name: str) -> None:
        """No two attempts of one step run at once: an earlier attempt's Job still running (its
        runner was cancelled before it could delete it) is deleted and awaited before the next
        attempt is created, since both would write the same workspace."""
        selector = (f"app={APP_LABEL},jervis-thread={label_value(job.thread_id)},"
                    f"jervis-step={step_label(job)}")
        for other in await self._api.list_jobs(selector):
            other_name = other.metadata.name if other.metadata else None
            if other_name and other_name != name and not job_finished(other):
                log.warning("Job %s of an earlier attempt still runs: deleting it before %s", other_name, name)
                await self._delete_or_fail(other_name, job)
                await self._wait_gone(other_name)

    async def _delete(self, name: str, job: AgentJob) -> StopFailure | None:
        """Delete the Job (retried); None once it is gone, else what failed (logged and counted)."""
        error = await delete_job(self._api, name, retry=self._delete_retry,
                                 deadline_seconds=self._settings.k8s_delete_timeout_seconds)
        if error is None:
            return None
        log.warning("could not delete Job %s (%s): its %s agent may still be running until its deadline", name,
                    error, job.agent_type)
        if self._metrics is not None:
            self._metrics.agent_job_not_deleted(job.agent_type)
        return StopFailure(job=name, error=error)

    async def _delete_or_fail(self, name: str, job: AgentJob) -> None:
        """Before a new attempt: a Job that cannot be deleted fails the attempt (both would write the workspace)."""
        failure = await self._delete(name, job)
        if failure is not None:
            raise KubernetesError(f"Job {failure.job} could not be deleted ({failure.error}): it may still be running")

    async def _delete_on_cancel(self, name: str, job: AgentJob) -> None:
        """Shielded from a second cancel, so the run's end hears of a Job that could not be deleted."""
        failure = await self._delete(name, job)
        if failure is not None:
            report_not_stopped(failure)

    def _has_result(self, job: AgentJob) -> bool:
        try:
            self._workspaces.read_result(job.workspace)
        except ResultFileError:
            return False
        return True

    async def _wait_gone(self, name: str) -> None:
        """Until a deleted Job is gone; a Job that stays is an error, not a reason to wait forever."""
        loop = asyncio.get_running_loop()
        limit = self._settings.k8s_delete_timeout_seconds
        deadline = loop.time() + limit
        while (current := await self._api.read_job(name)) is not None:
            remaining = deadline - loop.time()
            if remaining <= 0:
                finalizers = (current.metadata.finalizers if current.metadata else None) or []
                raise JobDeletionTimeoutError(f"Job {name} to disappear after its deletion", limit,
                                              f"it still exists; finalizers {finalizers or 'none'}")
            await asyncio.sleep(min(self._settings.k8s_poll_seconds / 4, remaining))

    async def _follow(self, name: str, job: AgentJob, on_log: LogSink | None) -> AgentResult:
        loop = asyncio.get_running_loop()
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        lines: asyncio.Queue[str] = asyncio.Queue()
        stop = LogStream()
        stall = StallWatch.for_job(job, self._settings.agent_stall_seconds)

        def enqueue(line: str) -> None:  # called from the log-reading thread
            loop.call_soon_threadsafe(lines.put_nowait, line)

        logs = asyncio.create_task(self._stream_logs(name, enqueue, stop, on_data=stall.output))
        pump = asyncio.create_task(_pump(lines, tail, name, on_log))
        not_stopped: StopFailure | None = None
        try:
            try:
                failure = await self._wait_until_done(name, job, stall)
            except (JobStartTimeoutError, JobNotFinishedError) as exc:
                failure = f"Agent {job.agent_type}: {exc}"
            if failure is not None:
                not_stopped = await self._delete(name, job)
                if not stop.opened:  # it never started (bad image, unschedulable): no last lines to wait for
                    stop.stop()
            await self._last_lines(name, logs)
        except BaseException as exc:  # cancelled: the agent must not outlive its run, unless it is suspended
            stop.stop()
            if should_detach():
                log.info("leaving Job %s running: the run is suspended and its next pod re-attaches", name)
            elif not isinstance(exc, Exception):
                await asyncio.shield(self._delete_on_cancel(name, job))
            elif (left := await self._delete(name, job)) is not None:  # the cluster failed us: the attempt fails
                raise KubernetesError(f"{exc}; Job {name} could not be deleted ({left.error}): its agent may "
                                      "still be running until its deadline") from exc
            raise
        finally:
            stop.stop()
            logs.cancel()
            await asyncio.sleep(0)  # let queued lines reach the pump
            while not lines.empty():
                _emit(lines.get_nowait(), tail, name, on_log)
            pump.cancel()
        exit_code = await self._exit_code(name)
        result = judge(self._workspaces, job, exit_code=exit_code, log_tail="\n".join(tail), failure=failure)
        result.not_stopped = not_stopped
        return result

    @staticmethod
    async def _last_lines(name: str, logs: asyncio.Task[None]) -> None:
        """Give the log stream a few seconds for the agent's last lines; its failure costs only lines."""
        try:
            await asyncio.wait_for(asyncio.shield(logs), 5)
        except TimeoutError:
            log.info("the log of Job %s did not end within 5 s of the Job: its last lines may be missing", name)
        except Exception as exc:
            log.warning("the log stream of Job %s failed: %s: its last lines may be missing", name, exc)

    async def _wait_until_done(self, name: str, job: AgentJob, stall: StallWatch) -> str | None:
        """None when the Job completed or failed by itself; else why the runner stopped it. Its pod
        must start within `k8s_start_timeout_seconds`, and the Job finish within that plus the
        agent's timeout (Kubernetes fails it at `activeDeadlineSeconds`; this is the backstop).
        The stall clock starts when a pod is first seen started (pulling an image is no stall)."""
        loop = asyncio.get_running_loop()
        start_limit = self._settings.k8s_start_timeout_seconds
        start_deadline = loop.time() + start_limit
        deadline = start_deadline + job.timeout_seconds
        started = False
        while True:
            if cancel_requested():
                raise asyncio.CancelledError(f"run cancelled: deleting Job {name}")
            current = await self._api.read_job(name)
            if current is None:
                return f"Job {name} was deleted before it finished"
            state = job_finished(current)
            if state == "Failed" and job_failure_reason(current) == "DeadlineExceeded":
                return f"Agent {job.agent_type} timed out after {job.timeout_seconds:g} s"
            if state is not None:
                return None
            pods = await self._api.job_pods(name)
            problem = fatal_pod_problem(pods)
            if problem is not None:
                return f"Agent {job.agent_type} could not start: {problem}"
            started = started or any(pod_started(pod) for pod in pods)
            if started and not stall.started:
                await stall.start()
            elif await stall.stalled():
                log.warning("agent of Job %s stalled: nothing logged or changed for %g s", name, stall.seconds)
                if self._metrics is not None:
                    self._metrics.agent_stalled(job.agent_type)
                return stall.summary()
            now = loop.time()
            if not started and now > start_deadline:
                raise JobStartTimeoutError(f"the pod of Job {name} to start", start_limit, pod_summary(pods))
            if now > deadline:
                raise JobNotFinishedError(f"Job {name} to finish", start_limit + job.timeout_seconds,
                                          f"agent timeout {job.timeout_seconds:g} s + start allowance "
                                          f"{start_limit:g} s; {pod_summary(pods)}")
            next_deadline = deadline if started else start_deadline
            await self._api.wait_for_change(name, min(self._settings.k8s_poll_seconds, max(next_deadline - now, 0.1)),
                                            since=current.metadata.resource_version if current.metadata else None)

    async def _stream_logs(self, name: str, on_line: LogSink, stop: LogStream, *,
                           on_data: Callable[[], None] | None = None) -> None:
        while not stop.stopped:
            pods = await self._api.job_pods(name)
            started = [p for p in pods if pod_started(p)]
            if started:
                try:
                    await asyncio.to_thread(self._api.follow_logs, started[0].metadata.name, on_line, stop,
                                            on_data=on_data)
                    return
                except Exception as exc:  # e.g. the container restarted or the pod went away
                    log.debug("log stream of %s interrupted: %s", name, exc)
            await asyncio.sleep(0.25)

    async def _exit_code(self, name: str) -> int | None:
        """The agent container's exit code from the Job's pods; None when it has none (it never
        ran, or was deleted) or the lookup failed, which is logged: judging goes on without it."""
        try:
            pods = await self._api.job_pods(name)
        except Exception as exc:
            log.warning("exit code of Job %s unknown: listing its pods failed: %s", name, exc)
            return None
        for pod in pods:
            for status in (pod.status.container_statuses or []) if pod.status else []:
                if status.state and status.state.terminated:
                    code: int | None = status.state.terminated.exit_code
                    return code
        return None


async def _pump(lines: asyncio.Queue[str], tail: deque[str], name: str, on_log: LogSink | None) -> None:
    while True:
        _emit(await lines.get(), tail, name, on_log)


def _emit(line: str, tail: deque[str], name: str, on_log: LogSink | None) -> None:
    tail.append(line)
    log.info("[%s] %s", name, line)
    if on_log is not None:
        on_log(line)
