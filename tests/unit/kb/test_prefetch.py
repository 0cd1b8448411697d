"""KB context for intake and for agents (app/kb/prefetch.py) against the fake KB."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from app.clients.knowledge_base import KnowledgeBaseClient
from app.kb.prefetch import ProjectContextPrefetch, fetch_project_context, prefetch_kb_context
from tests.fixtures.kb_server import FakeKbServer

QUERY = "Add a health endpoint to the router"


@pytest.fixture
def stored(kb: FakeKbServer) -> None:
    kb.add_node("api.py", "file", {"path": "app/api.py"}, client_id="c1", project_id="p1")
    kb.add_chunk("Coding conventions: use ruff and type hints everywhere", "doc:conventions", client_id="c1")
    kb.add_chunk("The router registers every endpoint in app/api.py", "code:app/api.py", client_id="c1",
                 project_id="p1")
    kb.add_chunk("Architecture: modules are api, graph and agents components", "doc:architecture",
                 client_id="c1", project_id="p1")
    kb.add_chunk("Implementation notes for file app/api.py: FastAPI router", "code:notes", client_id="c1",
                 project_id="p1")


@pytest.mark.usefixtures("stored")
async def test_fetch_project_context_returns_structure_conventions_and_knowledge(kb_client: KnowledgeBaseClient,
                                                                                 kb: FakeKbServer) -> None:
    context = await fetch_project_context(kb_client, query=QUERY, client_id="c1", project_id="p1")
    assert context.warnings == []
    assert "## Project structure\n- file api.py app/api.py" in context.text
    assert "## Conventions\n- [doc:conventions] Coding conventions: use ruff" in context.text
    assert "## Architecture" in context.text and "[doc:architecture] Architecture: modules" in context.text
    assert "## Relevant knowledge" in context.text and "The router registers every endpoint" in context.text
    assert {s["source"] for s in context.sources} >= {"code:app/api.py", "doc:architecture"}
    paths = sorted(r.path for r in kb.requests)
    assert paths == ["/api/v1/graph/search", "/api/v1/retrieve", "/api/v1/retrieve", "/api/v1/retrieve/simple"]
    conventions = next(r for r in kb.requests if r.path == "/api/v1/retrieve/simple")
    assert conventions.data["projectId"] == ""  # every project of the kb_client


async def test_fetch_project_context_skips_architecture_when_there_is_no_project(kb_client: KnowledgeBaseClient,
                                                                                 kb: FakeKbServer) -> None:
    kb.add_chunk("Health endpoint belongs to the router module", "doc:health", client_id="c1")
    context = await fetch_project_context(kb_client, query=QUERY, client_id="c1", project_id=None)
    assert len(kb.requests) == 3
    assert all(r.data.get("projectId") in (None, "") for r in kb.requests if r.method == "POST")
    assert "Health endpoint belongs to the router module" in context.text
    assert "## Architecture" not in context.text


@pytest.mark.usefixtures("stored")
async def test_prefetch_kb_context_returns_knowledge_and_file_notes(kb_client: KnowledgeBaseClient,
                                                                    kb: FakeKbServer) -> None:
    context = await prefetch_kb_context(kb_client, query=QUERY, client_id="c1", project_id="p1",
                                        files=["app/api.py", "b.py", "c.py", "d.py"])
    assert context.warnings == []
    assert "## Relevant knowledge\n- [code:app/api.py] The router registers every endpoint" in context.text
    assert "## Coding conventions" in context.text
    assert "## File app/api.py\n- [code:notes] Implementation notes for file app/api.py" in context.text
    queries = [r.data["query"] for r in kb.requests]
    assert "file d.py implementation notes" not in queries  # at most three files
    assert "file c.py implementation notes" in queries
    assert context.sources[0] == {"source": "code:app/api.py",
                                  "content": "The router registers every endpoint in app/api.py"}


@pytest.mark.parametrize("fetch", ["project", "agent"])
async def test_context_has_warnings_and_no_text_when_kb_is_down(kb_client: KnowledgeBaseClient, kb: FakeKbServer,
                                                                fetch: str) -> None:
    kb.set_mode("down")
    if fetch == "project":
        context = await fetch_project_context(kb_client, query=QUERY, client_id="c1", project_id="p1")
        expected = 4
    else:
        context = await prefetch_kb_context(kb_client, query=QUERY, client_id="c1", project_id=None, files=["a.py"])
        expected = 3
    assert context.text == "" and context.sources == []
    assert len(context.warnings) == expected
    assert all(w.startswith("KB ") and "HTTP 500" in w for w in context.warnings)


@pytest.mark.parametrize("fetch", ["project", "agent"])
async def test_context_has_timeout_warnings_and_returns_fast_when_kb_is_slow(http: httpx.AsyncClient,
                                                                             kb: FakeKbServer, fetch: str) -> None:
    kb.set_mode("slow", delay=2.0)
    kb_client = KnowledgeBaseClient(http, kb.url, kb.url, timeout=0.3)
    started = time.monotonic()
    if fetch == "project":
        context = await fetch_project_context(kb_client, query=QUERY, client_id="c1", project_id=None)
    else:
        context = await prefetch_kb_context(kb_client, query=QUERY, client_id="c1", project_id=None)
    elapsed = time.monotonic() - started
    assert elapsed < 1.5  # the calls run concurrently, each bounded by the kb_client timeout
    assert context.text == "" and context.warnings
    assert all("timed out after 0.3 s" in w for w in context.warnings)


@pytest.mark.usefixtures("stored")
async def test_a_started_lookup_is_taken_once_and_is_the_lookup_intake_would_make(kb_client: KnowledgeBaseClient,
                                                                                 kb: FakeKbServer) -> None:
    prefetch = ProjectContextPrefetch()
    prefetch.start("thread-1", kb_client, query=QUERY, client_id="c1", project_id="p1")

    started = prefetch.take("thread-1")
    assert started is not None and prefetch.take("thread-1") is None  # intake's second round fetches itself
    context = await started
    assert context == await fetch_project_context(kb_client, query=QUERY, client_id="c1", project_id="p1")
    assert len(kb.requests) == 8  # four lookups, each made twice: the prefetch and the comparison


async def test_a_lookup_nobody_took_is_cancelled_when_the_segment_ends(http: httpx.AsyncClient,
                                                                       kb: FakeKbServer) -> None:
    kb.set_mode("slow", delay=2.0)
    prefetch = ProjectContextPrefetch()
    running = prefetch.start("thread-2", KnowledgeBaseClient(http, kb.url, kb.url, timeout=5), query=QUERY,
                             client_id="c1", project_id=None)

    prefetch.discard("thread-2")

    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(running, 1)
    assert prefetch.take("thread-2") is None
