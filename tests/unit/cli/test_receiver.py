"""The local push receiver: Kotlin's two push routes, this run's pushes only, a taken port."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from app.cli.receiver import PortTakenError, PushReceiver, parse_address
from app.schemas.kotlin import ProgressPush, StatusPush

TASK = "a" * 32


@pytest.fixture
def receiver() -> Iterator[PushReceiver]:
    with PushReceiver("127.0.0.1", 0, task_id=TASK) as started:
        yield started


def status_push(task_id: str = TASK, thread_id: str = f"thread-{TASK}-1", status: str = "done") -> dict[str, object]:
    return StatusPush(task_id=task_id, thread_id=thread_id, status=status, summary="ok", branch="task/x",
                      artifacts=["a.py"]).wire()


def test_receiver_answers_pushes_and_queues_this_runs(receiver: PushReceiver) -> None:
    progress = ProgressPush(task_id=TASK, client_id="cli", node="plan", message="Plánuji", percent=12.5).wire()
    with httpx.Client(base_url=receiver.url) as http:
        assert http.post("/internal/orchestrator-progress", json=progress).json() == {"ok": True}
        assert http.post("/internal/orchestrator-status", json=status_push()).status_code == 200

    first, second = receiver.get(5), receiver.get(5)

    assert first is not None and first.progress is not None and first.progress.node == "plan"
    assert second is not None and second.status is not None
    assert (second.status.status, second.status.branch, second.status.artifacts) == ("done", "task/x", ["a.py"])
    assert receiver.accepted == 2 and receiver.get(0) is None


def test_receiver_answers_but_ignores_other_tasks_and_threads(receiver: PushReceiver) -> None:
    receiver.thread_id = f"thread-{TASK}-1"
    other_task = ProgressPush(task_id="b" * 32, client_id="cli", node="plan", message="x").wire()
    with httpx.Client(base_url=receiver.url) as http:
        assert http.post("/internal/orchestrator-progress", json=other_task).status_code == 200
        assert http.post("/internal/orchestrator-status", json=status_push(task_id="b" * 32)).status_code == 200
        assert http.post("/internal/orchestrator-status", json=status_push(thread_id="thread-x-2")).status_code == 200

    assert receiver.get(0) is None
    assert (receiver.accepted, receiver.ignored) == (0, 3)


def test_receiver_refuses_what_kotlin_could_not_decode_and_unknown_routes(receiver: PushReceiver) -> None:
    with httpx.Client(base_url=receiver.url) as http:
        assert http.post("/internal/orchestrator-status", json={"taskId": TASK}).status_code == 500
        assert http.post("/internal/orchestrator-status", content=b"{oops",
                         headers={"Content-Type": "application/json"}).status_code == 500
        assert http.post("/internal/elsewhere", json={}).status_code == 404
        assert http.post("/internal/tracker/create-issue", json={"clientId": "c", "title": "t"}).json()["ok"] is True
    assert receiver.get(0) is None


def test_taken_port_is_reported_so_the_client_can_poll_instead() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(PortTakenError):
            PushReceiver("127.0.0.1", port, task_id=TASK).start()


def test_stop_frees_the_port() -> None:
    receiver = PushReceiver("127.0.0.1", 0, task_id=TASK).start()
    port = receiver.port
    receiver.stop()
    with PushReceiver("127.0.0.1", port, task_id=TASK):
        pass


@pytest.mark.parametrize(("text", "address"), [("127.0.0.1:5500", ("127.0.0.1", 5500)), (":6000", ("127.0.0.1", 6000)),
                                               ("0.0.0.0:1", ("0.0.0.0", 1))])
def test_parse_address(text: str, address: tuple[str, int]) -> None:
    assert parse_address(text) == address


@pytest.mark.parametrize("text", ["5500", "host:", "host:port", "h:70000"])
def test_parse_address_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="expected HOST:PORT"):
        parse_address(text)
