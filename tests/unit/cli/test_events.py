"""SSE reading: parsing, and a cursor that survives dropped connections and segments."""

from __future__ import annotations

import io

import pytest

from app.cli.client import ServiceClient, StreamGoneError
from app.cli.events import EventStream, SseEvent, SseParser, StreamLostError, parse
from tests.support import FakeClock, free_port
from tests.unit.cli.fake_service import Connection, FakeService


def test_parser_reads_ids_types_multiline_data_and_skips_comments() -> None:
    text = ("retry: 2000\n\n: keepalive\n\n"
            "id: 7\nevent: node_start\ndata: {\"type\": \"node_start\",\ndata:  \"node\": \"plan\"}\n\n"
            "id: 8\ndata: {\"type\": \"done\"}\n\n"
            "event: odd\ndata: not json\n\n"
            "id: 9\nevent: partial\ndata: {}")  # no blank line yet: not complete

    assert parse(text) == [
        SseEvent(7, "node_start", {"type": "node_start", "node": "plan"}),
        SseEvent(8, "done", {"type": "done"}),  # no `event:` line: the payload's type
        SseEvent(None, "odd", {"raw": "not json"}),
    ]


def test_parser_handles_crlf_and_fields_without_space() -> None:
    parser = SseParser()
    events = [parser.feed(line) for line in ("id:3\r", "event:error\r", 'data:{"error": "x"}\r', "\r")]
    assert events[-1] == SseEvent(3, "error", {"error": "x"})


def test_stream_reconnects_with_last_event_id_and_never_repeats_an_event(fake_service: FakeService) -> None:
    fake_service.connections = [
        Connection([(1, "node_start", {"node": "intake"}), (2, "node_start", {"node": "plan"})], end="drop"),
        Connection([(2, "node_start", {"node": "plan"}), (3, "approval_required", {"interrupt": {}})]),
        Connection([(4, "node_start", {"node": "git_operations"}), (5, "done", {"summary": "ok"})]),
    ]
    with ServiceClient(fake_service.url) as client:
        stream = EventStream(client, "thread-abc-1", sleep=lambda _: None)

        first = [(e.id, e.type) for e in stream.events()]  # one segment, across a dropped connection
        second = [(e.id, e.type) for e in stream.events()]  # the next segment continues the cursor

    assert first == [(1, "node_start"), (2, "node_start"), (3, "approval_required")]
    assert second == [(4, "node_start"), (5, "done")]
    assert fake_service.last_event_ids == ["0", "2", "3"]
    assert (stream.cursor, stream.reconnects) == (5, 1)


def test_stream_gone_is_reported_as_such(fake_service: FakeService) -> None:
    with ServiceClient(fake_service.url) as client, pytest.raises(StreamGoneError):
        list(EventStream(client, "thread-abc-1").events())


def test_stream_gives_up_at_its_reconnect_deadline() -> None:
    clock = FakeClock(0.0)
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        clock.now += seconds

    with ServiceClient(f"http://127.0.0.1:{free_port()}") as client:
        stream = EventStream(client, "thread-abc-1", cursor=4, reconnect_seconds=3.0, clock=clock, sleep=sleep)
        with pytest.raises(StreamLostError):
            list(stream.events())

    assert sum(waits) == pytest.approx(3.0) and waits[0] == 0.25  # backoff, bounded by the deadline
    assert stream.cursor == 4


def test_the_terminal_names_the_program_that_runs_a_step_and_prints_its_lines() -> None:
    """A step planned for `openhands` that the local runner hands to Aider says so; its output
    lines carry the program's name, not the type's."""
    from app.cli.events import SseEvent
    from app.cli.render import Renderer

    out = io.StringIO()
    renderer = Renderer(out=out, err=io.StringIO(), color=False)
    renderer.on_event(SseEvent(1, "agent_start", {"agent": "openhands", "program": "aider", "goal_index": 0,
                                                  "step_index": 0, "attempt": 1}))
    renderer.on_event(SseEvent(2, "agent_log", {"agent": "aider", "line": "Aider v0.86.2"}))
    renderer.on_event(SseEvent(3, "agent_start", {"agent": "aider", "program": "aider", "goal_index": 0,
                                                  "step_index": 1, "attempt": 1}))
    lines = out.getvalue().splitlines()
    assert lines == ["▶ openhands → aider · goal 1 · step 1 · attempt 1", "  aider│ Aider v0.86.2",
                     "▶ aider · goal 1 · step 2 · attempt 1"]
