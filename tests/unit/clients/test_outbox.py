"""OutboxWriter (app/clients/outbox.py): a push produced while MongoDB is unreachable waits in
memory, bounded, and is stored and delivered in production order once MongoDB is back."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx

from app.clients.delivery import DeliveryService
from app.clients.kotlin import PROGRESS_PATH, KotlinClient
from app.clients.outbox import OutboxWriter
from app.dev.embedded_mongo import EmbeddedMongo
from app.observability.metrics import Metrics
from app.persistence.mongo import MongoTimeouts, create_client
from app.persistence.outbox import COLLECTION_NAME, OutboxStore
from app.schemas.kotlin import ProgressPush, StatusPush
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.support import free_port


def status(thread: str) -> StatusPush:
    return StatusPush(task_id="t1", client_id="c1", thread_id=thread, status="done")


def progress(node: str) -> ProgressPush:
    return ProgressPush(task_id="t1", client_id="c1", node=node, message=node)


async def test_pushes_wait_in_memory_while_mongodb_is_down_and_arrive_in_order(
        http: httpx.AsyncClient, kotlin: FakeKotlinServer, tmp_path: Path) -> None:
    port = free_port()  # MongoDB comes up here later
    mongo = create_client(f"mongodb://127.0.0.1:{port}", timeouts=MongoTimeouts(connect_seconds=0.3))
    store = OutboxStore(mongo["outbox_down"][COLLECTION_NAME], pod_id="p")
    metrics = Metrics()
    delivery = DeliveryService(store, http, kotlin.url, retry_base_seconds=0.05, metrics=metrics)
    writer = OutboxWriter(store, on_stored=delivery.notify, capacity=3, write_timeout=0.5, retry_base_seconds=0.05,
                          retry_max_seconds=0.2, metrics=metrics)
    client = KotlinClient(http, kotlin.url, writer)
    server = EmbeddedMongo(data_dir=None, work_dir=tmp_path, pick_port=lambda: port)
    await writer.start()
    try:
        started = time.monotonic()
        await client.push_status(status("thread-1"))  # waits for its write at most write_timeout
        await client.push_progress(progress("plan"))  # MongoDB known down: returns at once
        await client.push_progress(progress("execute_step"))
        await client.push_status(status("thread-2"))  # full: the oldest heartbeat gives way
        assert time.monotonic() - started < 2.0
        assert writer.pending == 3 and kotlin.events == []

        await asyncio.to_thread(server.start)
        await writer.flush(10)
        await delivery.flush(10)
    finally:
        await writer.stop(2)
        await delivery.stop(2)
        await mongo.close()
        server.stop()

    received = [(e.body.get("threadId") or e.body["node"]) for e in kotlin.events if e.outcome == "accepted"]
    assert received == ["thread-1", "execute_step", "thread-2"]
    assert metrics.push_failures.labels(PROGRESS_PATH)._value.get() == 1  # "plan" was given up
