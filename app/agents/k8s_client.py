"""Async facade over the official (synchronous) `kubernetes` client.

Every call runs in a worker thread with a client-side timeout (the generated client passes none,
and a half-open connection would hang forever), transient failures (429, 5xx) are retried with
backoff, and 404 / 409 get their meaning here (gone / already exists) instead of in callers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)

T = TypeVar("T")
TRANSIENT = frozenset({429, 500, 502, 503, 504})
#: A followed log may stay silent this long (a thinking agent) before the stream is dropped.
LOG_IDLE_SECONDS = 24 * 3600
#: Pod waiting reasons that will not resolve by themselves: fail the step at once.
FATAL_WAITING = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError",
                           "CreateContainerError"})


class KubernetesError(RuntimeError):
    """The Kubernetes API failed for a reason retrying will not fix."""


class LogStream:
    """Ends a followed pod log from another thread at once: `stop()` also shuts its connection's
    socket, so the thread blocked reading it returns now, not at the agent's next line (or after
    `LOG_IDLE_SECONDS`); a thread left reading would also hold up the process's exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped = False
        self._opened = False
        self._response: Any = None

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def opened(self) -> bool:
        """Whether a log was ever followed (a pod that never started has none)."""
        return self._opened

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            response, self._response = self._response, None
        if response is not None:
            with contextlib.suppress(Exception):  # already released or closed: nothing left to end
                response.shutdown()

    def attach(self, response: Any) -> bool:
        """Register the open response; False when the stream was stopped meanwhile (close it)."""
        with self._lock:
            if self._stopped:
                return False
            self._response = response
            self._opened = True
            return True

    def detach(self) -> None:
        with self._lock:
            self._response = None


def load_api_client(kubeconfig: str | None = None) -> client.ApiClient:
    """In-cluster configuration inside a pod, else the kubeconfig (explicit, $KUBECONFIG, ~/.kube)."""
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config()
        return client.ApiClient()
    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    return client.ApiClient(configuration)


class KubernetesApi:
    def __init__(self, api_client: client.ApiClient, namespace: str, *, request_timeout: float = 30.0,
                 attempts: int = 4, backoff: float = 0.5) -> None:
        self.namespace = namespace
        self._batch = client.BatchV1Api(api_client)
        self._core = client.CoreV1Api(api_client)
        self._timeout = request_timeout
        self._attempts = attempts
        self._backoff = backoff

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        kwargs.setdefault("_request_timeout", self._timeout)
        for attempt in range(1, self._attempts + 1):
            try:
                return await asyncio.to_thread(fn, *args, **kwargs)
            except ApiException as exc:
                if exc.status not in TRANSIENT or attempt == self._attempts:
                    raise
                log.warning("Kubernetes API %s (attempt %d), retrying", exc.status, attempt)
            except OSError as exc:  # connection refused / reset: the API server may be restarting
                if attempt == self._attempts:
                    raise KubernetesError(f"Kubernetes API unreachable: {exc}") from exc
                log.warning("Kubernetes API unreachable (attempt %d): %s", attempt, exc)
            await asyncio.sleep(self._backoff * 2 ** (attempt - 1))
        raise AssertionError("unreachable")

    async def create_job(self, body: client.V1Job) -> client.V1Job | None:
        """The created Job, or None when a Job of that name already exists."""
        try:
            return await self._call(self._batch.create_namespaced_job, self.namespace, body)
        except ApiException as exc:
            if exc.status == 409:
                return None
            raise KubernetesError(f"creating Job failed: {exc.status} {exc.reason}: {_message(exc)}") from exc

    async def read_job(self, name: str) -> client.V1Job | None:
        try:
            return await self._call(self._batch.read_namespaced_job, name, self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise KubernetesError(f"reading Job {name} failed: {exc.status} {exc.reason}") from exc

    async def delete_job(self, name: str) -> bool:
        """Delete the Job and its pods (Background propagation: no orphaned agent keeps running)."""
        try:
            await self._call(self._batch.delete_namespaced_job, name, self.namespace,
                             body=client.V1DeleteOptions(propagation_policy="Background"))
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise KubernetesError(f"deleting Job {name} failed: {exc.status} {exc.reason}") from exc
        return True

    async def list_jobs(self, label_selector: str) -> list[client.V1Job]:
        result = await self._call(self._batch.list_namespaced_job, self.namespace, label_selector=label_selector)
        return list(result.items)

    async def job_pods(self, name: str) -> list[client.V1Pod]:
        result = await self._call(self._core.list_namespaced_pod, self.namespace, label_selector=f"job-name={name}")
        return list(result.items)

    async def wait_for_change(self, name: str, seconds: float, *, since: str | None = None) -> None:
        """Return when the Job changes after resourceVersion `since` or after `seconds` (a short
        watch window; the caller polls around it, so a broken watch only costs latency). Without
        `since` the watch's first event is the Job as it is, and this returns at once."""
        def run() -> None:
            watcher = watch.Watch()
            options: dict[str, Any] = {"resource_version": since} if since else {}
            try:
                for _ in watcher.stream(self._batch.list_namespaced_job, self.namespace,
                                        field_selector=f"metadata.name={name}", timeout_seconds=max(1, int(seconds)),
                                        _request_timeout=seconds + 5, **options):
                    return
            finally:
                watcher.stop()

        try:
            await asyncio.to_thread(run)
        except Exception as exc:  # a failing watch degrades to polling
            log.debug("watch of Job %s failed: %s", name, exc)
            await asyncio.sleep(seconds)

    def follow_logs(self, pod: str, on_line: Callable[[str], None], stop: LogStream, *,
                    on_data: Callable[[], None] | None = None) -> None:
        """Blocking: stream the pod's log lines to `on_line` until the container ends or `stop`;
        `on_data` hears of every chunk, an unfinished line too (the progress watchdog's sign of output)."""
        # (connect, read): the client rejects None, and a follow may legitimately idle for long.
        # With _preload_content=False the client returns the urllib3 response, not the str it declares.
        response: Any = self._core.read_namespaced_pod_log(pod, self.namespace, container="agent", follow=True,
                                                      _preload_content=False, _request_timeout=(10, LOG_IDLE_SECONDS))
        if not stop.attach(response):
            response.release_conn()
            return
        try:
            buffer = b""
            for chunk in response.stream(4096):
                if stop.stopped:
                    return
                if on_data is not None and chunk:
                    on_data()
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    on_line(line.decode(errors="replace"))
            if buffer:
                on_line(buffer.decode(errors="replace"))
        except Exception:
            if stop.stopped:  # the read that `stop()` cut short: not a failure
                return
            raise
        finally:
            stop.detach()
            if stop.stopped:
                response.close()  # its socket may be shut down: not one for the pool
            else:
                response.release_conn()


def job_finished(job: client.V1Job) -> str | None:
    """"Complete" or "Failed" once the Job has a final condition, else None."""
    for condition in (job.status.conditions or []) if job.status else []:
        if condition.type in ("Complete", "Failed") and condition.status == "True":
            final: str = condition.type
            return final
    return None


def job_failure_reason(job: client.V1Job) -> str | None:
    for condition in (job.status.conditions or []) if job.status else []:
        if condition.type == "Failed" and condition.status == "True":
            reason: str = condition.reason or condition.message or "Failed"
            return reason
    return None


def fatal_pod_problem(pods: list[client.V1Pod]) -> str | None:
    """A waiting reason that will never resolve (bad image, missing secret), with its message."""
    for pod in pods:
        for status in (pod.status.container_statuses or []) if pod.status else []:
            waiting = status.state.waiting if status.state else None
            if waiting and waiting.reason in FATAL_WAITING:
                return f"{waiting.reason}: {waiting.message or status.image}"
    return None


def pod_started(pod: client.V1Pod) -> bool:
    return bool(pod.status and pod.status.phase in ("Running", "Succeeded", "Failed"))


def pod_summary(pods: list[client.V1Pod]) -> str:
    """What the Job's pods are doing, for a deadline's message ("pod x: Pending, Unschedulable: 0/3 nodes…")."""
    if not pods:
        return "no pod yet"
    parts = []
    for pod in pods:
        status = pod.status or client.V1PodStatus()
        reasons = [f"{c.reason}: {c.message}" if c.message else c.reason
                   for c in status.conditions or [] if c.status == "False" and c.reason]
        for container in status.container_statuses or []:
            waiting = container.state.waiting if container.state else None
            if waiting and waiting.reason:
                reasons.append(waiting.reason)
        phase = status.phase or "Unknown"
        name = pod.metadata.name if pod.metadata else "?"
        parts.append(f"pod {name}: {', '.join(dict.fromkeys([phase, *reasons]))}")
    return "; ".join(parts)[:500]


def _message(exc: ApiException) -> str:
    return (exc.body or "")[:300] if isinstance(exc.body, str) else str(exc.body)[:300]
