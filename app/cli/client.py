"""Typed HTTP calls to the service, one method per route the Kotlin server uses (plus `/runs`).

Failures become named errors the commands map to exit codes: unreachable (connect or timeout),
busy (429), refused (any other 4xx, with the service's `detail`), failed (5xx).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict

from app.schemas.kotlin import StreamStartResponse
from app.schemas.runs import RunList

DEFAULT_URL = "http://127.0.0.1:8090"


class ServiceError(RuntimeError):
    """The service answered, but not with what the call needs (HTTP 5xx or an unreadable body)."""


class ServiceUnreachableError(ServiceError, ConnectionError):
    """No answer at all: nothing listens, or the connection timed out."""


class ServiceBusyError(ServiceError):
    """HTTP 429: Kotlin's only "busy" signal (contract §0.4)."""


class RequestRefusedError(ServiceError):
    """HTTP 4xx: the service's `detail` says why."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(f"HTTP {status_code}: {detail}")
        self.status_code = status_code
        self.detail = detail


class StreamGoneError(LookupError):
    """`/stream` answered 404: the event log lives in one pod's memory and this one has none."""


class Health(BaseModel):
    """`GET /health`: Kotlin dispatches only when `status` is "ok"."""

    model_config = ConfigDict(extra="allow")

    status: str
    busy: bool = False
    dependencies: dict[str, Any] = {}

    def problem(self) -> str | None:
        """Why the service is not usable, or None."""
        if self.status == "ok":
            return None
        down = [f"{name}: {dep.get('error') or dep.get('status')}" for name, dep in self.dependencies.items()
                if isinstance(dep, dict) and dep.get("status") != "ok"]
        return f"service status is {self.status!r}" + (f" ({'; '.join(down)})" if down else "")


class RunStatus(BaseModel):
    """`GET /status/{thread_id}`: string values only, as Kotlin decodes them (contract §0.5)."""

    model_config = ConfigDict(extra="allow")

    status: str
    thread_id: str
    summary: str | None = None
    error: str | None = None
    report: str | None = None
    branch: str | None = None
    artifacts: str | None = None
    interrupt_action: str | None = None
    interrupt_description: str | None = None
    percent: str | None = None

    @property
    def artifact_list(self) -> list[str]:
        return [item for item in (self.artifacts or "").split(",") if item.strip()]

    @property
    def percent_value(self) -> float | None:
        try:
            return float(self.percent) if self.percent is not None else None
        except ValueError:
            return None


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:500] or response.reason_phrase
    if isinstance(body, dict) and body.get("detail") is not None:
        return str(body["detail"])
    return str(body)[:500]


class ServiceClient:
    """Synchronous client: the terminal waits on one thing at a time, and Ctrl-C reaches it."""

    def __init__(self, base_url: str = DEFAULT_URL, *, timeout: float = 30.0,
                 connect_timeout: float = 5.0, token: str | None = None) -> None:
        """`token`: the service's `API_TOKEN`, sent as a bearer token on every request when given."""
        self.base_url = base_url.rstrip("/")
        self._timeout = httpx.Timeout(timeout, connect=connect_timeout)
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self._http = httpx.Client(base_url=self.base_url, timeout=self._timeout, headers=headers)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise ServiceUnreachableError(f"{self.base_url} is not reachable ({type(exc).__name__}: {exc})") from exc
        if response.status_code == 429:
            raise ServiceBusyError(_detail(response))
        if 400 <= response.status_code < 500:
            raise RequestRefusedError(response.status_code, _detail(response))
        if response.status_code >= 500:
            raise ServiceError(f"HTTP {response.status_code}: {_detail(response)}")
        return response

    @staticmethod
    def _json(response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise ServiceError(f"unreadable answer from {response.request.url}: {response.text[:200]!r}") from exc

    def health(self) -> Health:
        return Health.model_validate(self._json(self._request("GET", "/health")))

    def start(self, body: dict[str, Any]) -> StreamStartResponse:
        """`POST /orchestrate/stream` with Kotlin's body."""
        return StreamStartResponse.model_validate(self._json(self._request("POST", "/orchestrate/stream", json=body)))

    def status(self, thread_id: str) -> RunStatus:
        return RunStatus.model_validate(self._json(self._request("GET", f"/status/{thread_id}")))

    def approve(self, thread_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self._json(self._request("POST", f"/approve/{thread_id}", json=body)))

    def cancel(self, thread_id: str) -> dict[str, Any]:
        """Like Kotlin: no body, a JSON content type."""
        response = self._request("POST", f"/cancel/{thread_id}", headers={"Content-Type": "application/json"},
                                 timeout=httpx.Timeout(60.0, connect=5.0))  # the service waits up to 15 s
        return dict(self._json(response))

    def runs(self, limit: int = 20) -> RunList:
        return RunList.model_validate(self._json(self._request("GET", "/runs", params={"limit": limit})))

    @contextmanager
    def stream_lines(self, thread_id: str, after: int, *, read_timeout: float) -> Iterator[Iterator[str]]:
        """The raw lines of `/stream/{thread_id}` after event `after`. The service sends a
        keepalive every 15 s, so `read_timeout` longer than that detects a dead connection.
        Transport errors propagate as httpx errors: the caller reconnects."""
        headers = {"Accept": "text/event-stream", "Last-Event-ID": str(after)}
        timeout = httpx.Timeout(self._timeout.connect or 5.0, read=read_timeout)
        with self._http.stream("GET", f"/stream/{thread_id}", headers=headers, timeout=timeout) as response:
            if response.status_code == 404:
                raise StreamGoneError(f"no event stream for {thread_id} on {self.base_url}")
            if response.status_code != 200:
                response.read()
                raise ServiceError(f"/stream/{thread_id}: HTTP {response.status_code}: {_detail(response)}")
            yield response.iter_lines()
