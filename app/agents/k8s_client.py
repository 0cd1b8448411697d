"""Async facade over the official (synchronous) `kubernetes` client.

Every call runs in a worker thread with a client-side timeout (the generated client passes none,
and a half-open connection would hang forever), transient failures (429, 5xx) are retried with
backoff, and 404 / 409 get their meaning here (gone / already exists) instead of in callers.
"""

from __future__ import annotations

import asyncio
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

    async def wait_for_change(self, name: str, seconds: float) -> None:
        """Return when the Job changes or after `seconds` (a short watch window; the caller polls
        around it, so a broken watch only costs latency)."""
        def run() -> None:
            watcher = watch.Watch()
            try:
                for _ in watcher.stream(self._batch.list_namespaced_job, self.namespace,
                                        field_selector=f"metadata.name={name}", timeout_seconds=max(1, int(seconds)),
                                        _request_timeout=seconds + 5):
                    return
            finally:
                watcher.stop()

        try:
            await asyncio.to_thread(run)
        except Exception as exc:  # a failing watch degrades to polling
            log.debug("watch of Job %s failed: %s", name, exc)
            await asyncio.sleep(seconds)

    def follow_logs(self, pod: str, on_line: Callable[[str], None], stop: threading.Event) -> None:
        """Blocking: stream the pod's log lines to `on_line` until the container ends or `stop`."""
        # (connect, read): the client rejects None, and a follow may legitimately idle for long.
        response = self._core.read_namespaced_pod_log(pod, self.namespace, container="agent", follow=True,
                                                      _preload_content=False, _request_timeout=(10, LOG_IDLE_SECONDS))
        try:
            buffer = b""
            for chunk in response.stream(4096):
                if stop.is_set():
                    return
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    on_line(line.decode(errors="replace"))
            if buffer:
                on_line(buffer.decode(errors="replace"))
        finally:
            response.release_conn()


def job_finished(job: client.V1Job) -> str | None:
    """"Complete" or "Failed" once the Job has a final condition, else None."""
    for condition in (job.status.conditions or []) if job.status else []:
        if condition.type in ("Complete", "Failed") and condition.status == "True":
            return condition.type
    return None


def job_failure_reason(job: client.V1Job) -> str | None:
    for condition in (job.status.conditions or []) if job.status else []:
        if condition.type == "Failed" and condition.status == "True":
            return condition.reason or condition.message or "Failed"
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


def _message(exc: ApiException) -> str:
    return (exc.body or "")[:300] if isinstance(exc.body, str) else str(exc.body)[:300]
