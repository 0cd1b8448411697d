"""The shared HTTP client's transport (app/clients/aiohttp_transport.py): httpx requests, responses
and exceptions over aiohttp, against the fake Kotlin and KB servers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.clients.aiohttp_transport import AiohttpTransport
from app.clients.knowledge_base import KnowledgeBaseClient, KnowledgeBaseError
from app.schemas.kotlin import ProgressPush, StatusPush
from tests.fixtures.kb_server import FakeKbServer
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.outbox import push_rig
from tests.support import free_port


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=AiohttpTransport(max_connections=4)) as http:
        yield http


async def test_a_post_arrives_with_its_headers_and_body_and_the_answer_reads_as_httpx(
        client: httpx.AsyncClient, kotlin: FakeKotlinServer) -> None:
    body = {"taskId": "t1", "clientId": "c1", "node": "intake", "message": "Analyzuji", "percent": 5.0}

    response = await client.post(f"{kotlin.url}/internal/orchestrator-progress", json=body,
                                 headers={"Idempotency-Key": "progress:t1:1"}, timeout=5)

    assert response.status_code == 200 and response.json() == {"ok": True}
    assert kotlin.progress == [body] and kotlin.violations == []
    assert kotlin.events[-1].idempotency_key == "progress:t1:1"


async def test_pushes_go_through_the_outbox_in_order_on_this_transport(client: httpx.AsyncClient,
                                                                      kotlin: FakeKotlinServer, mongo_db: Any) -> None:
    async with push_rig(client, kotlin.url, mongo_db) as rig:
        for node in ("intake", "evidence_pack", "respond"):
            await rig.client.push_progress(ProgressPush(task_id="t1", client_id="c1", node=node, message=node))
        await rig.client.push_status(StatusPush(task_id="t1", client_id="c1", thread_id="th-1", status="done",
                                                summary="ok"))
        await rig.flush()

    assert [p["node"] for p in kotlin.progress] == ["intake", "evidence_pack", "respond"]
    assert [(s["threadId"], s["status"]) for s in kotlin.statuses] == [("th-1", "done")]


async def test_a_refused_connection_is_an_httpx_connect_error(client: httpx.AsyncClient) -> None:
    with pytest.raises(httpx.ConnectError):
        await client.get(f"http://127.0.0.1:{free_port()}/health", timeout=2)


async def test_a_slow_answer_is_an_httpx_timeout_and_the_kb_client_says_so(client: httpx.AsyncClient,
                                                                         kb: FakeKbServer) -> None:
    kb.set_mode("slow", delay=2.0)
    kb_client = KnowledgeBaseClient(client, kb.url, kb.url, timeout=0.3)

    with pytest.raises(KnowledgeBaseError, match=r"KB timed out after 0\.3 s"):
        await kb_client.retrieve("anything", client_id="c1", project_id=None, max_results=1)
    kb.set_mode("ok")
    assert await kb_client.retrieve("anything", client_id="c1", project_id=None, max_results=1) == []
