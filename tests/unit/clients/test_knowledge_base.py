"""KnowledgeBaseClient (app/clients/knowledge_base.py) against the fake KB over real HTTP."""

from __future__ import annotations

import time

import httpx
import pytest

from app.clients.knowledge_base import KnowledgeBaseClient, KnowledgeBaseError
from tests.fixtures.kb_server import FakeKbServer
from tests.support import free_port


async def test_retrieve_sends_camel_case_body_with_null_project(kb_client: KnowledgeBaseClient,
                                                                kb: FakeKbServer) -> None:
    await kb_client.retrieve("health endpoint", client_id="c1", project_id=None)
    request = kb.requests[-1]
    assert (request.method, request.path) == ("POST", "/api/v1/retrieve")
    assert request.data == {"query": "health endpoint", "clientId": "c1", "projectId": None, "maxResults": 5,
                            "minConfidence": 0.0, "expandGraph": True}


@pytest.mark.parametrize("client_id", ["", None])
async def test_retrieve_sends_empty_client_id_never_null(kb_client: KnowledgeBaseClient, kb: FakeKbServer,
                                                         client_id: str | None) -> None:
    await kb_client.retrieve("x", client_id=client_id, project_id=None)  # type: ignore[arg-type]
    await kb_client.retrieve_simple("x", client_id=client_id, project_id="")  # type: ignore[arg-type]
    assert [r.data["clientId"] for r in kb.requests] == ["", ""]


async def test_retrieve_simple_sends_camel_case_body(kb_client: KnowledgeBaseClient, kb: FakeKbServer) -> None:
    await kb_client.retrieve_simple("conventions", client_id="c1", project_id="p1", max_results=3)
    request = kb.requests[-1]
    assert request.path == "/api/v1/retrieve/simple"
    assert request.data == {"query": "conventions", "clientId": "c1", "projectId": "p1", "maxResults": 3}


async def test_retrieve_returns_the_stored_chunks(kb_client: KnowledgeBaseClient, kb: FakeKbServer) -> None:
    kb.add_chunk("The health endpoint lives in app/api.py", "code:app/api.py", client_id="c1")
    kb.add_chunk("Unrelated billing notes", "doc:billing", client_id="c1")
    kb.add_chunk("Health of another kb_client", "doc:other", client_id="c2")
    items = await kb_client.retrieve("health endpoint", client_id="c1", project_id=None)
    assert [(i.content, i.source_urn, i.score) for i in items] == [
        ("The health endpoint lives in app/api.py", "code:app/api.py", 1.0)]
    assert items[0].kind == "code"


async def test_graph_search_sends_query_params_and_parses_nodes(kb_client: KnowledgeBaseClient,
                                                                kb: FakeKbServer) -> None:
    kb.add_node("api.py", "file", {"path": "app/api.py"}, client_id="c1", project_id="p1")
    nodes = await kb_client.graph_search(node_type="file", client_id="c1", project_id="p1", limit=50,
                                      branch_name=None)
    request = kb.requests[-1]
    assert (request.method, request.path) == ("GET", "/api/v1/graph/search")
    assert request.data == {"query": "", "nodeType": "file", "clientId": "c1", "limit": "50", "projectId": "p1"}
    assert [(n.label, n.properties["path"]) for n in nodes] == [("api.py", "app/api.py")]


async def test_graph_search_omits_project_and_adds_branch_when_given(kb_client: KnowledgeBaseClient,
                                                                     kb: FakeKbServer) -> None:
    await kb_client.graph_search(node_type="class", client_id="c1", project_id=None, branch_name="main")
    assert kb.requests[-1].data == {"query": "", "nodeType": "class", "clientId": "c1", "limit": "20",
                                    "branchName": "main"}


async def test_health_returns_the_kb_health_body(kb_client: KnowledgeBaseClient) -> None:
    assert (await kb_client.health())["status"] == "ok"


async def test_request_raises_kb_error_with_status_when_kb_is_down(kb_client: KnowledgeBaseClient,
                                                                   kb: FakeKbServer) -> None:
    kb.set_mode("down")
    with pytest.raises(KnowledgeBaseError, match="HTTP 500"):
        await kb_client.retrieve("x", client_id="c1", project_id=None)


async def test_request_raises_kb_error_quickly_when_kb_is_slower_than_timeout(http: httpx.AsyncClient,
                                                                              kb: FakeKbServer) -> None:
    kb.set_mode("slow", delay=2.0)
    kb_client = KnowledgeBaseClient(http, kb.url, kb.url, timeout=0.2)
    started = time.monotonic()
    with pytest.raises(KnowledgeBaseError, match=r"timed out after 0\.2 s"):
        await kb_client.graph_search(node_type="file", client_id="c1", project_id=None)
    assert time.monotonic() - started < 1.5


async def test_request_raises_kb_error_when_kb_is_unreachable(http: httpx.AsyncClient) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    kb_client = KnowledgeBaseClient(http, url, url, timeout=1)
    with pytest.raises(KnowledgeBaseError, match="unreachable"):
        await kb_client.retrieve("x", client_id="c1", project_id=None)


async def test_retrieve_raises_kb_error_when_project_without_client_is_rejected(kb_client: KnowledgeBaseClient) -> None:
    # The real KB answers 422 for a projectId without a clientId.
    with pytest.raises(KnowledgeBaseError, match="HTTP 422"):
        await kb_client.retrieve("x", client_id="", project_id="p1")
