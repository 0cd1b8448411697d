"""The KB MCP server (agent-images/kb_mcp/kb_server.py) against the fake KB.

End to end through the official MCP SDK: its stdio client (tests/agent_images/mcp_client.py, run
in the SDK's own virtualenv) starts the server as Claude Code would, lists the tools and calls
them; the fake KB records what arrived. The HTTP helpers are also checked directly (they need no
SDK), including the fixes of kb-contract §3.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.agent_images.conftest import KB_MCP_SERVER, base_env
from tests.fixtures.kb_server import FakeKbServer

MCP_CLIENT = Path(__file__).with_name("mcp_client.py")


def load_kb_server() -> ModuleType:
    spec = importlib.util.spec_from_file_location("jervis_kb_server", KB_MCP_SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return module


kb_server = load_kb_server()


def call_tools(python: Path, calls: list[tuple[str, dict[str, Any]]], tmp_path: Path, **env: str) -> dict[str, Any]:
    """Run the SDK client against the server over stdio; return tools, schemas and call results."""
    calls_file = tmp_path / "calls.json"
    calls_file.write_text(json.dumps(calls))
    done = subprocess.run([str(python), str(MCP_CLIENT), str(KB_MCP_SERVER), str(calls_file)],
                          env=base_env(**env), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def write_kb() -> Any:
    """A second KB: the write deployment (KB_WRITE_URL), separate from the read one."""
    with FakeKbServer() as server:
        yield server


@pytest.mark.slow
def test_tools_over_stdio_hit_the_real_routes(
    mcp_python: Path, kb: FakeKbServer, write_kb: FakeKbServer, tmp_path: Path
) -> None:
    kb.add_chunk("TokenService refreshes the JWT token", "git::p1::Token.kt", client_id="c1", project_id="p1")
    kb.add_node("main", "branch", {"branchName": "main", "isDefault": True}, client_id="c1", project_id="p1")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("kb_search", {"query": "token refresh", "max_results": 3}),
        ("kb_search_simple", {"query": "refreshes"}),
        ("kb_graph_search", {"node_type": "branch"}),
        ("kb_store", {"content": "Found: the token is refreshed lazily", "kind": "finding",
                      "metadata": {"file": "Token.kt"}}),
    ]

    answer = call_tools(mcp_python, calls, tmp_path, KB_URL=kb.url + "/", KB_WRITE_URL=write_kb.url + "/api/v1",
                        CLIENT_ID="c1", PROJECT_ID="p1")

    assert answer["server"] == "jervis-kb"
    assert sorted(answer["tools"]) == ["kb_graph_search", "kb_search", "kb_search_simple", "kb_store"]
    assert answer["tools"]["kb_search"]["required"] == ["query"]
    assert answer["tools"]["kb_store"]["required"] == ["content"]
    search, simple, graph, stored = answer["results"]
    assert not any(r["isError"] for r in answer["results"])
    assert "[score 1.00] git::p1::Token.kt (code)" in search["text"] and "TokenService" in search["text"]
    assert "git::p1::Token.kt" in simple["text"]
    assert '[branch] main' in graph["text"] and '"isDefault": true' in graph["text"]
    assert stored["text"] == "Stored 1 chunk(s) as agent://coding-agent (status success)"
    assert [(r.method, r.path, r.data) for r in kb.requests] == [
        ("POST", "/api/v1/retrieve", {"query": "token refresh", "clientId": "c1", "projectId": "p1", "maxResults": 3,
                                      "minConfidence": 0.6, "expandGraph": True}),
        ("POST", "/api/v1/retrieve/simple", {"query": "refreshes", "clientId": "c1", "projectId": "p1",
                                             "maxResults": 5}),
        ("GET", "/api/v1/graph/search", {"query": "", "clientId": "c1", "projectId": "p1", "limit": "20",
                                         "nodeType": "branch"}),
    ]
    ((method, path, data),) = [(r.method, r.path, r.data) for r in write_kb.requests]
    assert (method, path) == ("POST", "/api/v1/ingest")
    assert data == {"clientId": "c1", "projectId": "p1", "sourceUrn": "agent://coding-agent", "kind": "finding",
                    "content": "Found: the token is refreshed lazily", "metadata": {"file": "Token.kt"}}
    assert write_kb.chunks[0]["content"] == "Found: the token is refreshed lazily"


@pytest.mark.slow
def test_kb_failures_are_tool_errors_not_crashes(mcp_python: Path, kb: FakeKbServer, tmp_path: Path) -> None:
    kb.set_mode("down")
    answer = call_tools(mcp_python, [("kb_search", {"query": "x"}), ("kb_store", {"content": "y"})], tmp_path,
                        KB_URL=kb.url, CLIENT_ID="c1")
    search, store = answer["results"]
    assert search["isError"] and "KB POST /api/v1/retrieve failed: HTTP 500" in search["text"]
    assert store["isError"] and "KB POST /api/v1/ingest failed: HTTP 500" in store["text"]  # write URL = KB_URL


# ------------------------------------------------------------ HTTP helpers only
def test_settings_from_env_fix_the_url_defects() -> None:
    settings = kb_server.KbSettings.from_env({"KB_URL": "http://kb:8080/api/v1/", "CLIENT_ID": " c1 "})
    assert (settings.read_url, settings.write_url) == ("http://kb:8080", "http://kb:8080")
    assert settings.tenant() == {"clientId": "c1"}  # empty projectId/groupId are left out
    default = kb_server.KbSettings.from_env({})
    assert default.read_url == "http://jervis-knowledgebase:8080"
    split = kb_server.KbSettings.from_env({"KB_URL": "http://r:8080", "KB_WRITE_URL": "http://w:8080"})
    assert split.write_url == "http://w:8080"


def test_http_helpers_directly(kb: FakeKbServer) -> None:
    kb.add_chunk("alpha beta gamma delta", "urn:a", client_id="c1")
    settings = kb_server.KbSettings(read_url=kb.url, write_url=kb.url, client_id="c1")
    items = kb_server.retrieve(settings, "alpha gamma", max_results=5, min_confidence=0.0)
    assert [item["sourceUrn"] for item in items] == ["urn:a"]
    assert kb_server.format_items([], "q") == "No knowledge base results for: q"
    stored = kb_server.ingest(settings, "some text", kind="finding", source_urn="urn:b", metadata=None)
    assert stored["chunks_count"] == 1
    with pytest.raises(kb_server.KbError, match="HTTP 422"):
        kb_server.retrieve(kb_server.KbSettings(read_url=kb.url, write_url=kb.url, project_id="p1"), "x",
                           max_results=1, min_confidence=0.0)  # projectId without clientId: the KB says 422


def test_unreachable_kb_is_a_clear_error() -> None:
    settings = kb_server.KbSettings(read_url="http://127.0.0.1:9", write_url="http://127.0.0.1:9")
    with pytest.raises(kb_server.KbError, match="KB GET /api/v1/graph/search failed"):
        kb_server.graph_search(settings, "", node_type=None, limit=1)
