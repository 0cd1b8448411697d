"""A small stand-in for the Kotlin server's push endpoints, for one run of the client.

The service pushes every node start and every terminal status to `KOTLIN_SERVER_URL`
(contract §3). Listening there gives the client a second channel besides the SSE stream: a
`done`, `error` or `interrupted` push ends the client's wait even when the stream is gone (a
restarted pod has no event log), and progress pushes move the bar while it polls `/status`.
Like Kotlin, it answers 500 to a body it cannot decode and 200 to any other, whoever's run
it belongs to.
"""

from __future__ import annotations

import errno
import json
import queue
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from pydantic import ValidationError

from app.schemas.kotlin import ProgressPush, StatusPush

PROGRESS_PATH = "/internal/orchestrator-progress"
STATUS_PATH = "/internal/orchestrator-status"
#: Answered as Kotlin does, so a run that uses them does not fail because the client listens.
PLACEHOLDERS: dict[str, dict[str, Any]] = {"/internal/correction-progress": {"ok": True},
                "/internal/tracker/create-issue": {"ok": True, "message": "create-issue placeholder"},
                "/internal/tracker/update-issue": {"ok": True, "message": "update-issue placeholder"}}
DEFAULT_ADDRESS = "127.0.0.1:5500"


class PortTakenError(OSError):
    """Something (another client, a real Kotlin server) already listens on the address."""


@dataclass(frozen=True)
class Push:
    kind: Literal["progress", "status"]
    progress: ProgressPush | None = None
    status: StatusPush | None = None


def parse_address(text: str) -> tuple[str, int]:
    """`HOST:PORT` (or `:PORT`, loopback implied)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host or "127.0.0.1", int(port)


class PushReceiver:
    """Owned HTTP server on a daemon thread: `start()` binds (or raises PortTakenError),
    `stop()` shuts it down. Pushes for this run's task (and thread, once known) are queued for
    `get()`; everything else is answered and dropped."""

    def __init__(self, host: str, port: int, *, task_id: str) -> None:
        self.host = host
        self.port = port
        self.task_id = task_id
        self.thread_id: str | None = None
        self.accepted = 0
        """Pushes of this run so far (none: the service pushes somewhere else)."""
        self.ignored = 0
        self._pushes: queue.Queue[Push] = queue.Queue()
        self._count_lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> PushReceiver:
        handler = _handler_for(self)
        try:
            server = ThreadingHTTPServer((self.host, self.port), handler)
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                raise PortTakenError(exc.errno, f"{self.host}:{self.port} is taken") from exc
            raise
        server.daemon_threads = True
        self.port = server.server_address[1]  # port 0 → the one the OS chose
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="jervis-push-receiver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> PushReceiver:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def get(self, timeout: float) -> Push | None:
        """The next push for this run, waiting at most `timeout` seconds."""
        try:
            return self._pushes.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None

    def accept(self, path: str, body: dict[str, Any]) -> None:
        """Validate a push body as Kotlin would (ValueError when it cannot) and queue it if it
        belongs to this run."""
        if path == PROGRESS_PATH:
            progress = ProgressPush.model_validate(body)
            push = Push("progress", progress=progress) if progress.task_id == self.task_id else None
        else:
            status = StatusPush.model_validate(body)
            mine = status.task_id == self.task_id and self.thread_id in (None, status.thread_id)
            push = Push("status", status=status) if mine else None
        with self._count_lock:
            if push is None:
                self.ignored += 1
                return
            self.accepted += 1
        self._pushes.put(push)


def _handler_for(receiver: PushReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.path in PLACEHOLDERS:
                self._reply(200, PLACEHOLDERS[self.path])
                return
            if self.path not in (PROGRESS_PATH, STATUS_PATH):
                self._reply(404, {"ok": False})
                return
            try:
                body = json.loads(raw)
                if not isinstance(body, dict):
                    raise ValueError("not an object")
                receiver.accept(self.path, body)
            except (ValueError, ValidationError):
                self._reply(500, {"ok": False})
                return
            self._reply(200, {"ok": True})

        def do_GET(self) -> None:
            self._reply(404, {"ok": False})

        def _reply(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: Any) -> None:
            """Silent: the terminal belongs to the run's output."""

    return Handler
