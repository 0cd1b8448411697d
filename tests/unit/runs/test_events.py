"""Numbered run events for SSE replay (app/runs/events.py)."""

from __future__ import annotations

import asyncio
import json

from app.observability.redaction import REDACTED, Redactor
from app.runs.events import EventHub, EventLog, RunEvent


async def collect(log: EventLog, after_id: int = 0, timeout: float = 2.0) -> list[RunEvent | None]:
    async def run() -> list[RunEvent | None]:
        return [event async for event in log.follow(after_id)]

    return await asyncio.wait_for(run(), timeout)


def test_event_ids_keep_increasing_across_open_close_segments() -> None:
    log = EventLog(capacity=100)
    log.open()
    ids = [log.publish("node_start", {"node": "intake"}).id, log.publish("approval_required", {}).id]
    log.close()
    log.open()  # the resume
    ids.append(log.publish("node_start", {"node": "git_operations"}).id)
    log.close()
    assert ids == [1, 2, 3] and log.last_id == 3


def test_run_event_sse_carries_id_type_and_json_data() -> None:
    event = RunEvent(7, "done", {"summary": "Hotovo ✓"})
    assert event.sse() == 'id: 7\nevent: done\ndata: {"type": "done", "summary": "Hotovo ✓"}\n\n'
    assert json.loads(event.sse().split("data: ", 1)[1])["type"] == "done"


async def test_follow_replays_only_events_after_the_given_id_and_ends_when_closed() -> None:
    log = EventLog(capacity=100)
    log.open()
    for node in ("intake", "evidence_pack", "respond"):
        log.publish("node_start", {"node": node})
    log.close()
    replay = await collect(log, after_id=1)
    assert [(e.id, e.data["node"]) for e in replay if e] == [(2, "evidence_pack"), (3, "respond")]
    assert await collect(log, after_id=3) == []


async def test_follow_waits_for_an_event_published_later() -> None:
    log = EventLog(capacity=100)
    log.open()
    follower = asyncio.create_task(collect(log))
    await asyncio.sleep(0.05)
    assert not follower.done()  # a live segment: the follower waits
    log.publish("node_start", {"node": "intake"})
    await asyncio.sleep(0.05)
    log.publish("done", {"summary": "ok"})
    log.close()
    events = await follower
    assert [(e.id, e.type) for e in events if e] == [(1, "node_start"), (2, "done")]


async def test_follow_yields_none_as_keepalive_after_silence() -> None:
    log = EventLog(capacity=100)
    log.open()
    stream = log.follow(0, keepalive=0.05)
    assert await asyncio.wait_for(anext(stream), 1.0) is None
    log.publish("node_start", {"node": "plan"})
    event = await asyncio.wait_for(anext(stream), 1.0)
    assert event is not None and event.data["node"] == "plan"
    log.close()
    assert [e async for e in stream] == []


async def test_follow_replays_what_the_bounded_buffer_still_holds() -> None:
    log = EventLog(capacity=2)
    for index in range(5):
        log.publish("agent_log", {"line": str(index)})
    assert [e.id for e in await collect(log) if e] == [4, 5]


def test_hub_forgets_oldest_inactive_logs_beyond_max_threads() -> None:
    hub = EventHub(capacity=10, max_threads=2)
    first = hub.log("a")
    hub.log("b")
    hub.log("c")
    assert hub.get("a") is None
    assert hub.get("b") is not None and hub.get("c") is not None
    assert hub.log("a") is not first  # a new, empty log


def test_hub_keeps_a_log_when_it_was_used_recently() -> None:
    hub = EventHub(capacity=10, max_threads=2)
    hub.log("a")
    hub.log("b")
    hub.log("a")  # touching "a" makes "b" the oldest
    hub.log("c")
    assert hub.get("b") is None and hub.get("a") is not None


def test_hub_never_forgets_an_active_log() -> None:
    hub = EventHub(capacity=10, max_threads=1)
    active = hub.log("running")
    active.open()
    hub.log("other")
    assert hub.get("running") is active
    active.publish("node_start", {})
    assert hub.log("running").last_id == 1


def test_hub_forgets_newer_idle_logs_when_the_oldest_is_active() -> None:
    hub = EventHub(capacity=10, max_threads=2)
    hub.log("running").open()
    hub.log("idle-1")
    hub.log("idle-2")
    hub.log("idle-3")
    assert hub.get("running") is not None and hub.get("idle-3") is not None
    assert hub.get("idle-1") is None and hub.get("idle-2") is None


async def test_every_string_of_an_event_is_redacted_before_anyone_can_read_it() -> None:
    hub = EventHub(capacity=10, redact=Redactor(["configured-db-password"]))
    log = hub.log("thread-1")
    log.publish("agent_log", {"agent": "aider", "line": "export GIT_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123"})
    log.publish("approval_required", {"interrupt": {"description": "mongodb://u:configured-db-password@db",
                                                    "changed_files": ["a.py"]}, "percent": 92.0})
    line, waiting = [e for e in await collect(log) if e]
    assert line.data["line"] == f"export GIT_TOKEN=ghp_{REDACTED}" and line.data["agent"] == "aider"
    assert waiting.data["interrupt"] == {"description": f"mongodb://u:{REDACTED}@db", "changed_files": ["a.py"]}
    assert "configured-db-password" not in waiting.sse() and waiting.data["percent"] == 92.0
