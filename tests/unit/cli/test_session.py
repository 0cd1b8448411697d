"""Following a run when the stream is gone, and Ctrl-C: the session against a scripted service."""

from __future__ import annotations

import io
from collections.abc import Callable

import httpx

from app.cli.client import ServiceClient
from app.cli.codes import ExitCode
from app.cli.receiver import PushReceiver
from app.cli.render import Renderer
from app.cli.session import AnsweredElsewhereError, RunSession
from app.schemas.kotlin import StatusPush
from tests.unit.cli.fake_service import Connection, FakeService

TASK = "c" * 32
THREAD = f"thread-{TASK}-1"


def renderer() -> Renderer:
    return Renderer(quiet=True, out=io.StringIO(), err=io.StringIO())


def test_status_push_ends_the_wait_when_stream_and_status_are_gone(fake_service: FakeService) -> None:
    fake_service.statuses = [{"status": "running", "percent": "30"}, 503]
    with PushReceiver("127.0.0.1", 0, task_id=TASK) as receiver, ServiceClient(fake_service.url) as client:
        receiver.thread_id = THREAD
        push = StatusPush(task_id=TASK, thread_id=THREAD, status="done", summary="Hotovo.", branch="task/c")
        httpx.post(f"{receiver.url}/internal/orchestrator-status", json=push.wire()).raise_for_status()
        session = RunSession(client, renderer(), thread_id=THREAD, receiver=receiver, ask=lambda *_: None,
                             confirm=lambda _: False, poll_seconds=600, lost_seconds=0.2)

        outcome = session.run()

    assert outcome.code == ExitCode.DONE and outcome.stop is not None
    assert (outcome.stop.source, outcome.stop.summary, outcome.stop.branch) == ("push", "Hotovo.", "task/c")
    assert not session.streaming and fake_service.status_calls == 2


def test_stale_push_of_an_answered_gate_does_not_ask_again(fake_service: FakeService) -> None:
    """/status says running: the interrupted push was from the segment already answered."""
    fake_service.statuses = [{"status": "running"}, {"status": "running"}, {"status": "done", "summary": "ok"}]
    with PushReceiver("127.0.0.1", 0, task_id=TASK) as receiver, ServiceClient(fake_service.url) as client:
        push = StatusPush(task_id=TASK, thread_id=THREAD, status="interrupted", interrupt_action="commit")
        httpx.post(f"{receiver.url}/internal/orchestrator-status", json=push.wire()).raise_for_status()
        session = RunSession(client, renderer(), thread_id=THREAD, receiver=receiver, ask=lambda *_: "yes",
                             confirm=lambda _: False, poll_seconds=0.01, settle_seconds=0)

        outcome = session.run()

    assert outcome.code == ExitCode.DONE and fake_service.approvals == []


def test_ctrl_c_at_a_question_then_yes_cancels_the_run(fake_service: FakeService) -> None:
    fake_service.connections = [Connection([(1, "approval_required", {"interrupt": {"action": "commit"}})])]

    def ask(*_: object) -> str:
        raise KeyboardInterrupt

    with ServiceClient(fake_service.url) as client:
        outcome = RunSession(client, renderer(), thread_id=THREAD, ask=ask, confirm=lambda _: True).run()

    assert outcome.code == ExitCode.USER_STOPPED and fake_service.cancels == 1 and fake_service.approvals == []


def test_ctrl_c_twice_leaves_the_run_alone(fake_service: FakeService) -> None:
    fake_service.connections = [Connection([(1, "approval_required", {"interrupt": {"action": "commit"}})])]

    def ask(*_: object) -> str:
        raise KeyboardInterrupt

    def confirm(_: str) -> bool:
        raise EOFError

    with ServiceClient(fake_service.url) as client:
        outcome = RunSession(client, renderer(), thread_id=THREAD, ask=ask, confirm=confirm).run()

    assert outcome.code == ExitCode.DETACHED and fake_service.cancels == 0


def test_a_question_answered_in_the_console_stops_the_terminals_prompt(fake_service: FakeService) -> None:
    """The terminal waits for a typed answer; the console answers first: the prompt gives way and
    the session follows the run to its end, sending no second answer."""
    fake_service.connections = [Connection([(1, "approval_required", {"interrupt": {"action": "commit"}})])]
    fake_service.statuses = [{"status": "interrupted", "interrupt_action": "commit"}, {"status": "running"},
                             {"status": "done", "summary": "Committed."}]
    probes: list[bool] = []

    def ask(_: str, answered_elsewhere: Callable[[], bool]) -> str:
        while not probes or not probes[-1]:
            probes.append(answered_elsewhere())
        raise AnsweredElsewhereError

    with ServiceClient(fake_service.url) as client:
        outcome = RunSession(client, renderer(), thread_id=THREAD, ask=ask, confirm=lambda _: False,
                             poll_seconds=0.01, settle_seconds=0).run()

    assert probes == [False, True]
    assert outcome.code == ExitCode.DONE and fake_service.approvals == []
