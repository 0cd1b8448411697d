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


async def test_follow_replays_what_the_bounded_buffer_still_holds_after_a_gap_event() -> None:
    log = EventLog(capacity=2)
    for index in range(5):
        log.publish("agent_log", {"line": str(index)})
    gap, *rest = [e for e in await collect(log) if e]
    assert (gap.type, gap.id, gap.data["first_lost_id"], gap.data["last_lost_id"]) == ("gap", 3, 1, 3)
    assert [e.id for e in rest] == [4, 5]


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


# ------------------------------------------------------------------ byte caps
def line_event(chars: int) -> dict[str, str]:
    return {"agent": "aider", "line": "x" * chars}


def test_log_drops_its_oldest_events_past_its_byte_cap() -> None:
    log = EventLog(capacity=1000, max_bytes=10_000)
    for _ in range(50):
        log.publish("agent_log", line_event(900))
    assert log.bytes <= 10_000 and log.held >= 9
    assert log.dropped_through == 50 - log.held  # the oldest went, the newest are all there


async def test_reconnect_older_than_what_is_held_gets_a_gap_naming_the_lost_ids_then_the_rest() -> None:
    log = EventLog(capacity=1000, max_bytes=10_000)
    log.open()
    for _ in range(50):
        log.publish("agent_log", line_event(900))
    log.close()
    first_held = log.dropped_through + 1

    events = [e for e in await collect(log, after_id=5) if e]

    gap = events[0]
    assert gap.type == "gap" and gap.data["first_lost_id"] == 6 and gap.data["last_lost_id"] == first_held - 1
    assert gap.id == first_held - 1  # a client that reconnects after the gap is not told twice
    assert f"id: {gap.id}\nevent: gap\n" in gap.sse()
    assert [e.id for e in events[1:]] == list(range(first_held, 51))
    assert next(e for e in await collect(log, after_id=first_held - 1) if e).id == first_held  # no gap: nothing lost


async def test_a_slow_follower_is_told_about_events_dropped_while_it_was_reading() -> None:
    log = EventLog(capacity=3)
    log.open()
    stream = log.follow(0)
    log.publish("node_start", {"node": "intake"})
    first = await asyncio.wait_for(anext(stream), 1.0)
    for index in range(6):  # ids 2..7 while the follower is away: 2..4 are dropped
        log.publish("agent_log", {"line": str(index)})
    log.close()

    rest = [e async for e in stream]

    assert first.id == 1
    assert [(e.type, e.id) for e in rest] == [("gap", 4), ("agent_log", 5), ("agent_log", 6), ("agent_log", 7)]
    assert (rest[0].data["first_lost_id"], rest[0].data["last_lost_id"]) == (2, 4)


def test_an_oversize_event_is_truncated_and_evicts_nothing_else() -> None:
    log = EventLog(capacity=1000, max_bytes=100_000, max_event_bytes=8_000)
    for index in range(10):
        log.publish("node_start", {"node": f"n{index}"})

    big = log.publish("verification", {"acceptable": False, "checks": [{"name": "tests", "message": "E" * 500_000}]})

    assert big.size <= 8_000 and big.data["truncated"] is True
    assert big.data["checks"][0]["name"] == "tests" and big.data["checks"][0]["message"].startswith("EEEE")
    assert big.data["acceptable"] is False and big.id == 11
    assert log.held == 11 and log.dropped_through == 0


def test_an_event_of_countless_small_parts_is_cut_to_its_type_and_size() -> None:
    log = EventLog(capacity=10, max_bytes=100_000, max_event_bytes=2_000)
    event = log.publish("verification", {"checks": [{"n": {"m": [i] * 40}} for i in range(60)]})
    assert event.size <= 2_000 and event.data["truncated"] is True and event.type == "verification"


def test_ids_stay_monotonic_across_segments_while_events_are_dropped() -> None:
    log = EventLog(capacity=1000, max_bytes=5_000)
    ids = []
    for _segment in range(3):
        log.open()
        ids += [log.publish("agent_log", line_event(1000)).id for _ in range(10)]
        log.close()
    assert ids == list(range(1, 31)) and log.dropped_through == 30 - log.held


def test_hub_drops_the_oldest_events_of_any_thread_past_its_byte_cap() -> None:
    hub = EventHub(capacity=1000, thread_bytes=20_000, max_bytes=30_000, event_bytes=5_000)
    old, new = hub.log("old"), hub.log("new")
    for _ in range(15):
        old.publish("agent_log", line_event(900))
    for _ in range(15):
        new.publish("agent_log", line_event(900))

    assert hub.bytes <= 30_000 and hub.bytes == old.bytes + new.bytes
    assert old.dropped_through > 0 and new.dropped_through == 0  # the older thread's events went first
    assert new.held == 15


def test_hub_counts_no_bytes_of_a_forgotten_thread_and_tells_its_reader() -> None:
    hub = EventHub(capacity=100, max_threads=1)
    gone = hub.log("a")
    gone.publish("done", {"summary": "ok"})
    hub.log("b").publish("node_start", {"node": "intake"})
    assert hub.get("a") is None and hub.bytes == hub.log("b").bytes
    assert gone.gap(0) is not None and gone.gap(0).data["last_lost_id"] == 1


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
