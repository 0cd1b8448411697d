"""DeliveryService (app/clients/delivery.py): backoff, expiry, order per task and claim leases, on a
real MongoDB and the fake Kotlin server, with the clock in the test's hand."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import httpx

from app.clients.delivery import ACK_SECONDS, DeliveryService
from app.clients.kotlin import PROGRESS_PATH, STATUS_PATH
from app.persistence.outbox import COLLECTION_NAME, OutboxItem, OutboxStore
from app.schemas.kotlin import ProgressPush, StatusPush
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.outbox import PushRig, push_rig
from tests.support import FakeClock

DONE_ID = "status:thread-a:done"


def status(state: str = "done", task_id: str = "a") -> StatusPush:
    return StatusPush(task_id=task_id, client_id="c1", thread_id=f"thread-{task_id}", status=state)  # type: ignore[arg-type]


def progress(node: str, task_id: str = "a") -> ProgressPush:
    return ProgressPush(task_id=task_id, client_id="c1", node=node, message=node)


async def until(probe: Callable[[], Any], timeout: float = 5.0) -> Any:
    """Poll without blocking the event loop (the service under test runs in it)."""
    deadline = time.monotonic() + timeout
    while not (found := probe()):
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)
    return found


async def deliver_all(rig: PushRig, rounds: int = 10) -> None:
    for _ in range(rounds):
        await rig.delivery.deliver_due()
        if (await rig.store.stats()).depth == 0:
            return
    raise AssertionError("outbox not empty")


async def test_backoff_doubles_up_to_the_cap_with_jitter(http: httpx.AsyncClient, mongo_db: Any) -> None:
    def service(jitter: float) -> DeliveryService:
        store = OutboxStore(mongo_db[COLLECTION_NAME], pod_id="p")
        return DeliveryService(store, http, "http://kotlin", retry_base_seconds=1.0,
                               retry_max_seconds=60.0, jitter=lambda: jitter)

    highest, lowest = service(1.0), service(0.0)
    assert [highest.backoff(n) for n in range(1, 10)] == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert [lowest.backoff(n) for n in (1, 3, 9)] == [0.5, 2.0, 30.0]


async def test_status_survives_five_minutes_of_kotlin_failures(http: httpx.AsyncClient, kotlin: FakeKotlinServer,
                                                               mongo_db: Any) -> None:
    clock = FakeClock(time.time())  # real epoch: tombstones are purged by a TTL index on wall time
    async with push_rig(http, kotlin.url, mongo_db, clock=clock) as rig:
        kotlin.fail_next(1_000_000, status=503)
        await rig.client.push_status(status("done"))
        await rig.writer.flush(5)
        await rig.delivery.deliver_due()  # the immediate attempt (from memory) fails
        started, gaps = clock.now, []
        while clock.now - started < 300:
            doc = await rig.store.get(DONE_ID)
            assert doc is not None
            gaps.append(round(doc["due_at"] - clock.now))
            clock.now = doc["due_at"]
            await rig.delivery.deliver_due()

        pending = await rig.store.get(DONE_ID)
        assert pending is not None and pending["state"] == "pending"
        assert gaps == [1, 2, 4, 8, 16, 32, 60, 60, 60, 60]
        assert pending["attempts"] == len(kotlin.failures) == 11 and kotlin.statuses == []

        kotlin.fail_next(0)
        clock.now = pending["due_at"]
        await rig.delivery.deliver_due()
        await rig.delivery.deliver_due()

    assert [s["status"] for s in kotlin.statuses] == ["done"]
    assert kotlin.accepted_keys(STATUS_PATH) == [DONE_ID]
    assert (await rig.store.get(DONE_ID) or {})["state"] == "delivered"


async def test_pushes_expire_progress_soon_status_after_a_day(http: httpx.AsyncClient, kotlin: FakeKotlinServer,
                                                              mongo_db: Any) -> None:
    clock = FakeClock(time.time())  # real epoch: tombstones are purged by a TTL index on wall time
    async with push_rig(http, kotlin.url, mongo_db, clock=clock,
                        writer_options={"progress_expiry_seconds": 900, "status_expiry_seconds": 86_400}) as rig:
        kotlin.fail_next(1_000_000, status=503)
        await rig.client.push_progress(progress("plan", task_id="p"))
        await rig.client.push_status(status("done"))
        await rig.writer.flush(5)
        await rig.delivery.deliver_due()

        clock.now += 901
        await rig.delivery.deliver_due()
        assert await rig.store.get("progress:p") is None
        assert (await rig.store.get(DONE_ID) or {})["state"] == "pending"

        clock.now += 86_400
        await rig.delivery.deliver_due()
        assert (await rig.store.get(DONE_ID) or {})["state"] == "expired"
        await rig.client.push_status(status("done"))  # the identity stays taken: not stored again
        await rig.writer.flush(5)
        assert (await rig.store.stats()).depth == 0

    assert rig.metrics.push_failures.labels(PROGRESS_PATH)._value.get() == 1
    assert rig.metrics.push_failures.labels(STATUS_PATH)._value.get() == 1
    assert kotlin.progress == [] and kotlin.statuses == []


async def test_each_task_gets_its_pushes_in_production_order_after_an_outage(
        http: httpx.AsyncClient, kotlin: FakeKotlinServer, mongo_db: Any) -> None:
    clock = FakeClock(time.time())  # real epoch: tombstones are purged by a TTL index on wall time
    async with push_rig(http, kotlin.url, mongo_db, clock=clock) as rig:
        kotlin.fail_next(1_000_000, status=503)
        pushes = [rig.client.push_progress(progress("plan")),
                  rig.client.push_status(status("interrupted"), segment="i1"),
                  rig.client.push_progress(progress("intake", task_id="b")),
                  rig.client.push_progress(progress("git_operations")),  # resumed after the answer
                  rig.client.push_status(status("done"))]
        for push in pushes:
            await push
            clock.now += 0.1
            await rig.delivery.deliver_due()

        kotlin.fail_next(0)
        clock.now += 120
        await deliver_all(rig)

    received = [(e.route, e.body.get("status") or e.body["node"]) for e in kotlin.events
                if e.outcome == "accepted" and e.body["taskId"] == "a"]
    # The plan heartbeat failed with a status waiting behind it: dropped, it would only be stale.
    assert received == [(STATUS_PATH, "interrupted"), (PROGRESS_PATH, "git_operations"), (STATUS_PATH, "done")]
    assert [p["node"] for p in kotlin.progress if p["taskId"] == "b"] == ["intake"]


def stored_status(clock: FakeClock, thread: str = "thread-a") -> OutboxItem:
    body = StatusPush(task_id="a", client_id="c1", thread_id=thread, status="done").wire()
    return OutboxItem(id=f"status:{thread}:done", key=f"status:{thread}:done", order_key="task:a", kind="status",
                      path=STATUS_PATH, body=body, seq=1, created_at=clock.now, due_at=clock.now,
                      expires_at=clock.now + 3600)


async def test_a_claimed_push_is_sent_by_one_pod_only(http: httpx.AsyncClient, kotlin: FakeKotlinServer,
                                                      mongo_db: Any) -> None:
    clock = FakeClock(time.time())  # real epoch: tombstones are purged by a TTL index on wall time
    async with push_rig(http, kotlin.url, mongo_db, clock=clock, pod_id="pod-a", lease_seconds=30) as pod_a, \
            push_rig(http, kotlin.url, mongo_db, clock=clock, pod_id="pod-b", lease_seconds=30) as pod_b:
        assert await pod_a.store.add(stored_status(clock))  # pod A stored it and holds its lease

        await pod_b.delivery.deliver_due()
        assert kotlin.statuses == []  # B leaves it to A while A's lease runs

        clock.now += 31  # A died without sending it: both pods go for it at once
        await asyncio.gather(pod_a.delivery.deliver_due(), pod_b.delivery.deliver_due())
        await asyncio.gather(pod_a.delivery.deliver_due(), pod_b.delivery.deliver_due())

    assert len(kotlin.statuses) == 1 and kotlin.accepted_keys() == ["status:thread-a:done"]


async def test_start_replays_what_a_dead_pod_left(http: httpx.AsyncClient, kotlin: FakeKotlinServer,
                                                  mongo_db: Any) -> None:
    dead = OutboxStore(mongo_db[COLLECTION_NAME], pod_id="dead-pod", lease_seconds=0.0)
    await dead.setup()
    clock = FakeClock(time.time())
    assert await dead.add(stored_status(clock, "thread-left"))

    async with push_rig(http, kotlin.url, mongo_db, pod_id="survivor", poll=True, poll_seconds=30) as rig:
        await until(lambda: kotlin.statuses)
        await rig.client.push_status(status("error", task_id="b"))  # a new push goes out at once
        await until(lambda: len(kotlin.statuses) == 2)

    assert [s["threadId"] for s in kotlin.statuses] == ["thread-left", "thread-b"]


class CountingStore(OutboxStore):
    """The real store, recording the deletes of delivered progress (what a node's push costs)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settled: list[str] = []

    async def delivered(self, item: OutboxItem) -> None:
        if item.kind == "progress":
            self.settled.append(f"{item.id}@{item.seq}")
        await super().delivered(item)


async def test_a_task_s_progress_costs_one_write_per_node_and_one_delete_after_its_status(
        http: httpx.AsyncClient, kotlin: FakeKotlinServer, mongo_db: Any) -> None:
    """Each node's heartbeat overwrites the task's document: nothing is deleted between nodes, and
    the task's status removes the last heartbeat at once (no delivered push outlives the run)."""
    async with push_rig(http, kotlin.url, mongo_db, store_class=CountingStore) as rig:
        store = rig.store
        assert isinstance(store, CountingStore)
        for node in ("intake", "evidence_pack", "respond"):
            await rig.client.push_progress(progress(node))
            await until(lambda n=node: [p for p in kotlin.progress if p["node"] == n])
        doc = await store.get("progress:a")
        assert doc is not None and doc["body"]["node"] == "respond"  # delivered, its delete not due yet
        assert store.settled == []

        await rig.client.push_status(status("done"))
        await until(lambda: store.settled)
        assert await store.get("progress:a") is None
        assert len(store.settled) == 1 and store.settled[0].startswith("progress:a@")
        assert (await store.stats()).depth == 0
    assert [p["node"] for p in kotlin.progress] == ["intake", "evidence_pack", "respond"]
    assert [s["status"] for s in kotlin.statuses] == ["done"]


async def test_a_delivered_heartbeat_is_deleted_once_its_delay_passed(
        http: httpx.AsyncClient, kotlin: FakeKotlinServer, mongo_db: Any) -> None:
    """A long step's last heartbeat does not stay pending until its lease runs out (another pod
    would send it again): the background poll deletes it after a short delay."""
    clock = FakeClock(time.time())
    async with push_rig(http, kotlin.url, mongo_db, clock=clock, poll=True, poll_seconds=0.05) as rig:
        await rig.client.push_progress(progress("execute_step"))
        await until(lambda: kotlin.progress)
        await asyncio.sleep(0.3)  # several poll rounds, the delay not passed on the test's clock
        assert await rig.store.get("progress:a") is not None
        clock.now += ACK_SECONDS + 0.01
        await until_stored_gone(rig, "progress:a")
    assert len(kotlin.progress) == 1


async def until_stored_gone(rig: PushRig, doc_id: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while await rig.store.get(doc_id) is not None:
        assert time.monotonic() < deadline, f"{doc_id} still stored"
        await asyncio.sleep(0.02)


async def test_a_poll_round_does_not_resend_a_delivered_heartbeat_or_slow_its_task(
        http: httpx.AsyncClient, kotlin: FakeKotlinServer, mongo_db: Any) -> None:
    """A round that meets the stored document of a heartbeat this pod delivered leaves it alone, and
    the task's next push still goes out at once, not on the next poll."""
    clock = FakeClock(time.time())  # the delete's delay never passes
    async with push_rig(http, kotlin.url, mongo_db, clock=clock, poll=True, poll_seconds=0.05) as rig:
        await rig.client.push_progress(progress("intake"))
        await until(lambda: kotlin.progress)
        await asyncio.sleep(0.2)  # several poll rounds
        assert await rig.store.get("progress:a") is not None
        await rig.client.push_progress(progress("respond"))
        await until(lambda: len(kotlin.progress) == 2)
    assert [p["node"] for p in kotlin.progress] == ["intake", "respond"]
