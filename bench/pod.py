"""One service pod for the load, burst and soak benchmarks, and the runs they send through it.

`pod()` starts the loopback stack (bench/loopback.py: nx-27017, the scripted LLM answering at
once, fake Kotlin and KB) and the service as a real `python -m uvicorn` process, as the tests
start it (tests/fixtures/service.py), with the scripted coding agent. Not forked from the tests'
pre-warmed interpreter: a plain process, so its memory and descriptors are its own.

Runs come in three kinds: `advice` (a question answered: intake, evidence_pack, respond,
finalize), `code` (one goal, one code step by the scripted agent in a fresh git repository,
committed without asking) and `approval` (the same, but the commit waits for the user's approval,
which `drive_run` gives). The fake Kotlin server here also indexes the pushes by thread and task,
so waiting for a run's status costs nothing however many runs came before.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("JERVIS_TEST_PREWARM", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
from pymongo import MongoClient
from starlette.responses import JSONResponse

from bench.loopback import Loopback, loopback
from tests.fixtures.kotlin_server import PROGRESS, STATUS, FakeKotlinServer, PushRecord
from tests.fixtures.llm_server import RecordedRequest, Reply, ScriptedLlmServer
from tests.fixtures.service import ServiceProcess, service_env
from tests.support import (
    approval,
    classification,
    file_block,
    goals_json,
    kotlin_rules,
    make_git_repo,
    new_task_id,
    node_marker,
    orchestrate_body,
    steps_json,
)

KINDS = ("advice", "code", "approval")
TERMINAL = frozenset({"done", "error"})
#: Put in a code request: the scripted intake classifies it as code, everything else as advice.
CODE_MARK = "[bench-code]"


class IndexedKotlin(FakeKotlinServer):
    """The fake Kotlin server, its accepted pushes also indexed by thread (status) and task (progress)."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = threading.Condition()
        self.statuses_of: dict[str, list[PushRecord]] = {}
        self.progress_of: dict[str, list[PushRecord]] = {}

    def _record(self, record: PushRecord) -> JSONResponse:
        response = super()._record(record)
        if record.outcome == "accepted" and isinstance(record.body, dict):
            with self._changed:
                if record.route == STATUS:
                    self.statuses_of.setdefault(record.body["threadId"], []).append(record)
                elif record.route == PROGRESS:
                    self.progress_of.setdefault(record.body["taskId"], []).append(record)
                self._changed.notify_all()
        return response

    def wait_status(self, thread_id: str, seen: int, timeout: float) -> PushRecord | None:
        """The status push after the first `seen` ones of this thread; None on timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.statuses_of.get(thread_id, ())) <= seen:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._changed.wait(left)
            return self.statuses_of[thread_id][seen]

    def first_progress(self, task_id: str) -> float | None:
        """Wall time the first progress push of this task arrived."""
        with self._changed:
            found = self.progress_of.get(task_id)
            return found[0].received_at_wall if found else None


@dataclass
class Pod:
    stack: Loopback
    kotlin: IndexedKotlin
    service: ServiceProcess
    work: Path
    data_root: Path

    @property
    def url(self) -> str:
        return self.service.url

    @property
    def pid(self) -> int:
        assert self.service.proc is not None
        return self.service.proc.pid

    @property
    def mongo_port(self) -> int:
        return int(self.stack.mongo.url.rsplit(":", 1)[1].split("/")[0])

    @property
    def mongo_pid(self) -> int | None:
        return self.stack.mongo.pid

    def store(self) -> MongoClient[dict[str, Any]]:
        return MongoClient(self.stack.mongo.url)

    @property
    def database(self) -> str:
        return self.service.env["MONGODB_DATABASE"]

    @property
    def checkpoint_database(self) -> str:
        return self.service.env["CHECKPOINT_DATABASE"]


@contextlib.contextmanager
def pod(work: Path | None = None, **settings: Any) -> Iterator[Pod]:
    """The stack and one started service (settings as keyword overrides, e.g. max_concurrent_orchestrations=1)."""
    work = work or Path(tempfile.mkdtemp(prefix="jervis-bench-"))
    kotlin = IndexedKotlin()
    with loopback(work, kotlin=kotlin) as stack:
        script_instant_runs(stack.llm)
        data_root = work / "data"
        data_root.mkdir(exist_ok=True)
        env = service_env(mongo_url=stack.mongo.url, llm_url=stack.llm.url, kotlin_url=kotlin.url,
                          kb_url=stack.kb.url, data_root=data_root, **settings)
        service = ServiceProcess(env=env, log_path=work / "service.log").start(timeout=120)
        try:
            yield Pod(stack, kotlin, service, work, data_root)
        finally:
            service.stop()


def _intake(request: RecordedRequest) -> str:
    if CODE_MARK in request.text:
        return classification("single_task", "code", "simple")
    return classification("advice", "respond")


def script_instant_runs(llm: ScriptedLlmServer) -> None:
    """Every answer of the three kinds of run in one streamed piece, no generation delay."""
    steps = steps_json({"instructions": file_block("app/health.py", "def health():\n    return {'status': 'ok'}"),
                        "step_type": "code", "files": ["app/health.py"]})
    llm.script(
        Reply(match=node_marker("intake"), content=_intake, name="intake", chunk_size=100_000),
        Reply(match=node_marker("respond"), content="Jervis umí odpovídat na otázky.", name="respond",
              chunk_size=100_000),
        Reply(match=node_marker("plan"), content=goals_json("Endpoint /health"), name="plan", chunk_size=100_000),
        Reply(match=node_marker("plan_steps"), content=steps, name="plan_steps", chunk_size=100_000),
        Reply(match=node_marker("finalize"), content="Hotovo: přidán endpoint.", name="finalize", chunk_size=100_000),
    )


def run_body(kind: str, data_root: Path) -> dict[str, Any]:
    """What Kotlin sends for a run of this kind (a code run gets a git repository of its own)."""
    if kind == "advice":
        return orchestrate_body(query="Co umíš?")
    task_id = new_task_id()
    rel = f"clients/c1/{task_id}"
    make_git_repo(data_root / rel)
    rules = kotlin_rules(require_approval_commit=kind == "approval", require_approval_push=False)
    return orchestrate_body(task_id=task_id, workspace_path=rel, rules=rules,
                            query=f"Přidej endpoint /health do API {CODE_MARK}")


@dataclass
class RunResult:
    kind: str
    task_id: str
    thread_id: str = ""
    status: str = ""
    """the run's last status push (done / error), or `timeout` / `http <code>`"""
    sent: float = 0.0
    """wall time the dispatch was sent"""
    answered: float = 0.0
    """wall time `POST /orchestrate/stream` answered 200"""
    ended: float = 0.0
    """wall time Kotlin received the terminal status push"""
    busy_retries: int = 0
    approvals: int = 0
    statuses: list[str] = field(default_factory=list)

    @property
    def dispatch_ms(self) -> float:
        return (self.answered - self.sent) * 1000

    @property
    def seconds(self) -> float:
        return self.ended - self.sent if self.ended else float("nan")


def drive_run(client: httpx.Client, kotlin: IndexedKotlin, kind: str, data_root: Path, *,
              timeout: float = 120.0, on_start: Callable[[str], None] | None = None) -> RunResult:
    """Dispatch one run (retrying while the slot is busy: 429), approve what it asks, and wait for
    its terminal status push; `on_start` hears the thread id once the dispatch was accepted."""
    body = run_body(kind, data_root)
    result = RunResult(kind, body["task_id"])
    deadline = time.monotonic() + timeout
    while True:
        result.sent = time.time()
        response = client.post("/orchestrate/stream", json=body)
        result.answered = time.time()
        if response.status_code != 429 or time.monotonic() > deadline:
            break
        result.busy_retries += 1
        time.sleep(0.02)
    if response.status_code != 200:
        result.status = f"http {response.status_code}"
        return result
    result.thread_id = response.json()["thread_id"]
    if on_start is not None:
        on_start(result.thread_id)
    while True:
        push = kotlin.wait_status(result.thread_id, len(result.statuses), max(0.0, deadline - time.monotonic()))
        if push is None:
            result.status = "timeout"
            return result
        status = push.body["status"]
        result.statuses.append(status)
        if status == "interrupted":
            result.approvals += 1
            client.post(f"/approve/{result.thread_id}", json=approval(True, "ano"))
        elif status in TERMINAL:
            result.status, result.ended = status, push.received_at_wall
            return result


def first_push_ms(kotlin: IndexedKotlin, result: RunResult) -> float | None:
    """ms from the dispatch's 200 to Kotlin's receipt of the run's first progress push."""
    first = kotlin.first_progress(result.task_id)
    return None if first is None else (first - result.answered) * 1000


_METRIC = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$")


def read_metrics(client: httpx.Client) -> dict[str, float]:
    """`GET /metrics` as {name{labels}: value}."""
    found = {}
    for line in client.get("/metrics").text.splitlines():
        match = _METRIC.match(line)
        if match:
            found[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return found
