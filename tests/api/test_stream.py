"""`GET /stream/{thread_id}` on the in-process app with an injected event hub: a client that
reconnects with a `Last-Event-ID` older than what the byte caps kept is told what it lost."""

from __future__ import annotations

import httpx

from app.api.deps import get_event_hub
from app.cli.events import parse
from app.config import Settings
from app.main import create_app
from app.runs.events import EventHub


async def test_reconnect_past_the_byte_cap_gets_a_gap_event_then_what_is_held() -> None:
    hub = EventHub(capacity=1000, thread_bytes=8_000, max_bytes=1 << 20, event_bytes=4_000)
    log = hub.log("thread-t1-00000000")
    log.open()
    for index in range(30):
        log.publish("agent_log", {"agent": "aider", "line": f"{index:03d} " + "x" * 800})
    log.close()
    app = create_app(Settings())
    app.dependency_overrides[get_event_hub] = lambda: hub

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://[::1]") as http:
        response = await http.get("/stream/thread-t1-00000000", headers={"Last-Event-ID": "2"})

    events = parse(response.text)
    first_held = log.dropped_through + 1
    assert response.status_code == 200 and first_held > 3
    assert (events[0].type, events[0].id) == ("gap", first_held - 1)
    assert (events[0].data["first_lost_id"], events[0].data["last_lost_id"]) == (3, first_held - 1)
    assert [e.id for e in events[1:]] == list(range(first_held, 31))
