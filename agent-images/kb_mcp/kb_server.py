#!/usr/bin/env python3
"""Jervis Knowledge Base MCP server (stdio) for the coding agents.

Claude Code and Junie start it from `.claude/mcp.json` as `python3 /opt/jervis/mcp/kb_server.py`
with CLIENT_ID, PROJECT_ID, GROUP_ID, KB_URL and KB_WRITE_URL in its environment. It replaces the
original `service-kb-mcp/server.py`, whose defects (kb-contract §3) it fixes:

1. Built on the SDK's high-level server (`MCPServer` in mcp 2.x, `FastMCP` in 1.x), whose
   `tool()` decorator exists; the low-level `Server` has none, so the original never imported.
2. KB_URL is the service's base URL; this server adds the `/api/v1` prefix (and tolerates a
   base URL that already ends in it).
3. Writes go to KB_WRITE_URL (the KB's write deployment), falling back to KB_URL.
4. No `kb_traverse` with the wrong body shape: the tools are the four the orchestrator documents.
5. Only fields the KB really returns are read: `score`, `sourceUrn`, `content`, `metadata.kind`,
   graph `properties.type`, ingest `chunks_count`.

The HTTP layer is plain standard library (`urllib`), kept apart from the MCP wiring so it can be
tested and reused without the SDK; blocking calls run in a worker thread.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

API_PREFIX = "/api/v1"
DEFAULT_KB_URL = "http://jervis-knowledgebase:8080"
SEARCH_TIMEOUT, SIMPLE_TIMEOUT, GRAPH_TIMEOUT, STORE_TIMEOUT = 30.0, 15.0, 15.0, 30.0
CONTENT_PREVIEW = 1500
ERROR_PREVIEW = 500


class KbError(RuntimeError):
    """A KB call failed; the message is what the agent sees (method, path, status, KB's detail)."""


@dataclass(frozen=True)
class KbSettings:
    """Where the KB is and which tenant this agent works for (fixed for the server's lifetime)."""

    read_url: str
    write_url: str
    client_id: str = ""
    project_id: str = ""
    group_id: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> KbSettings:
        read_url = base_url(env.get("KB_URL") or DEFAULT_KB_URL)
        return cls(
            read_url=read_url,
            write_url=base_url(env.get("KB_WRITE_URL") or read_url),
            client_id=(env.get("CLIENT_ID") or "").strip(),
            project_id=(env.get("PROJECT_ID") or "").strip(),
            group_id=(env.get("GROUP_ID") or "").strip(),
        )

    def tenant(self) -> dict[str, str]:
        """camelCase tenant keys; empty ones are left out (the KB treats null and absent alike,
        and an explicit empty projectId would widen nothing while a null clientId is a 422)."""
        keys = {"clientId": self.client_id, "projectId": self.project_id, "groupId": self.group_id}
        return {key: value for key, value in keys.items() if value}


def base_url(url: str) -> str:
    """The service base URL without a trailing slash or `/api/v1` (this module adds the prefix)."""
    url = url.strip().rstrip("/")
    return url[: -len(API_PREFIX)] if url.endswith(API_PREFIX) else url


# ---------------------------------------------------------------------- HTTP
def request_json(method: str, url: str, *, body: Mapping[str, Any] | None = None, timeout: float) -> Any:
    """One JSON request; any failure becomes a KbError that says what was called and why it failed."""
    data = json.dumps(body).encode("utf-8") if body is not None else None
    headers = {"Accept": "application/json", **({"Content-Type": "application/json"} if data else {})}
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    where = f"KB {method} {urllib.parse.urlsplit(url).path}"
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", errors="replace")[:ERROR_PREVIEW]
        raise KbError(f"{where} failed: HTTP {exc.code}: {detail}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise KbError(f"{where} failed: {getattr(exc, 'reason', exc)}") from exc
    try:
        return json.loads(raw) if raw else None
    except ValueError as exc:
        raise KbError(f"{where} returned invalid JSON: {exc}") from exc


def retrieve(settings: KbSettings, query: str, *, max_results: int, min_confidence: float) -> list[dict[str, Any]]:
    """Hybrid search (`POST /api/v1/retrieve`): RAG + graph + entities; `score` is a rank (top = 1.0)."""
    body = {"query": query, **settings.tenant(), "maxResults": max_results, "minConfidence": min_confidence,
            "expandGraph": True}
    return items_of(request_json("POST", f"{settings.read_url}{API_PREFIX}/retrieve", body=body,
                                 timeout=SEARCH_TIMEOUT))


def retrieve_simple(settings: KbSettings, query: str, *, max_results: int) -> list[dict[str, Any]]:
    """Vector-only search (`POST /api/v1/retrieve/simple`); `score` is a similarity."""
    body = {"query": query, **settings.tenant(), "maxResults": max_results}
    return items_of(request_json("POST", f"{settings.read_url}{API_PREFIX}/retrieve/simple", body=body,
                                 timeout=SIMPLE_TIMEOUT))


def graph_search(settings: KbSettings, query: str, *, node_type: str | None, limit: int) -> list[dict[str, Any]]:
    """Graph nodes whose label contains `query` (`GET /api/v1/graph/search`). `query` is required
    by the KB, so it is always sent, empty meaning "all"."""
    params = {"query": query, **settings.tenant(), "limit": str(limit)}
    if node_type:
        params["nodeType"] = node_type
    url = f"{settings.read_url}{API_PREFIX}/graph/search?{urllib.parse.urlencode(params)}"
    nodes = request_json("GET", url, timeout=GRAPH_TIMEOUT)
    if not isinstance(nodes, list):
        raise KbError("KB GET /api/v1/graph/search did not return a list")
    return [node for node in nodes if isinstance(node, dict)]


def ingest(settings: KbSettings, content: str, *, kind: str, source_urn: str,
           metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """Store text (`POST /api/v1/ingest` on the write service). The KB drops `metadata`
    (kb-contract §2.4); it is sent anyway so a fixed KB would keep it."""
    body = {**settings.tenant(), "sourceUrn": source_urn, "kind": kind, "content": content,
            "metadata": dict(metadata or {})}
    answer = request_json("POST", f"{settings.write_url}{API_PREFIX}/ingest", body=body, timeout=STORE_TIMEOUT)
    return answer if isinstance(answer, dict) else {}


def items_of(answer: Any) -> list[dict[str, Any]]:
    """The `items` of an EvidencePack."""
    items = answer.get("items") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise KbError("KB retrieve answer has no items list")
    return [item for item in items if isinstance(item, dict)]


# ---------------------------------------------------------------- formatting
def format_items(items: list[dict[str, Any]], query: str) -> str:
    """Search hits as text for the model: score, source, kind (if the KB knows it) and content."""
    if not items:
        return f"No knowledge base results for: {query}"
    lines = [f"{len(items)} result(s) for: {query}", ""]
    for number, item in enumerate(items, 1):
        metadata = item.get("metadata")
        kind = (metadata.get("kind") or "") if isinstance(metadata, dict) else ""
        score = item.get("score")
        score_text = f"{score:.2f}" if isinstance(score, (int, float)) else "?"
        lines.append(f"{number}. [score {score_text}] {item.get('sourceUrn', '')}" + (f" ({kind})" if kind else ""))
        lines.append(str(item.get("content", ""))[:CONTENT_PREVIEW])
        lines.append("")
    return "\n".join(lines).rstrip()


def format_nodes(nodes: list[dict[str, Any]], query: str) -> str:
    """Graph nodes as text: type (from `properties`), label, key and the useful properties."""
    if not nodes:
        return f"No graph nodes for: {query!r}"
    lines = [f"{len(nodes)} node(s) for: {query!r}"]
    for node in nodes:
        found = node.get("properties")
        properties: dict[str, Any] = found if isinstance(found, dict) else {}
        shown = {k: v for k, v in properties.items() if not k.startswith("_") and k not in
                 ("type", "label", "clientId", "projectId", "groupId", "ragChunks")}
        lines.append(f"- [{properties.get('type', '?')}] {node.get('label', '')} (key {node.get('key', '')})"
                     + (f" {json.dumps(shown, ensure_ascii=False)}" if shown else ""))
    return "\n".join(lines)


def format_stored(answer: Mapping[str, Any], source_urn: str) -> str:
    """The ingest answer as one line (`chunks_count` is the KB's field name)."""
    return f"Stored {answer.get('chunks_count', 0)} chunk(s) as {source_urn} (status {answer.get('status', '?')})"


# ----------------------------------------------------------------- MCP wiring
def build_server(settings: KbSettings) -> Any:
    """The MCP server with the four KB tools (mcp 2.x `MCPServer`, or 1.x `FastMCP`)."""
    import anyio.to_thread

    try:
        from mcp.server.mcpserver import MCPServer as HighLevelServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP as HighLevelServer  # type: ignore[no-redef,attr-defined]
        from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef,import-not-found]

    server = HighLevelServer("jervis-kb")

    async def blocking(function: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a KB call in a worker thread; its failure becomes a ToolError, the one exception
        whose text the SDK hands to the model (anything else reaches it as a bare "error")."""
        try:
            return await anyio.to_thread.run_sync(lambda: function(*args, **kwargs))
        except KbError as exc:
            raise ToolError(str(exc)) from exc

    @server.tool()
    async def kb_search(query: str, max_results: int = 10, min_confidence: float = 0.6) -> str:
        """Search the project's knowledge base (code, docs, decisions, earlier findings) with hybrid
        retrieval. Scores rank hits (the best is 1.0); min_confidence drops weaker ones."""
        items = await blocking(retrieve, settings, query, max_results=max_results, min_confidence=min_confidence)
        return format_items(items, query)

    @server.tool()
    async def kb_search_simple(query: str, max_results: int = 5) -> str:
        """Plain vector search of the knowledge base; scores are similarities (0-1)."""
        return format_items(await blocking(retrieve_simple, settings, query, max_results=max_results), query)

    @server.tool()
    async def kb_graph_search(query: str = "", node_type: str | None = None, limit: int = 20) -> str:
        """Find knowledge-graph nodes whose label contains `query` ("" lists all), optionally of one
        node_type (repository, branch, file, class, method, ...)."""
        nodes = await blocking(graph_search, settings, query, node_type=node_type, limit=limit)
        return format_nodes(nodes, query)

    @server.tool()
    async def kb_store(content: str, kind: str = "finding", source_urn: str = "agent://coding-agent",
                       metadata: dict[str, Any] | None = None) -> str:
        """Store a finding in the knowledge base so later tasks can find it. Put everything worth
        keeping into `content`: the KB does not keep `metadata`."""
        answer = await blocking(ingest, settings, content, kind=kind, source_urn=source_urn, metadata=metadata)
        return format_stored(answer, source_urn)

    return server


def main() -> None:
    """Serve on stdio until the client closes the pipe."""
    build_server(KbSettings.from_env(os.environ)).run("stdio")


if __name__ == "__main__":
    main()
