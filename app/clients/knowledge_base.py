"""Client of the real Knowledge Base API (kb-contract.md): camelCase requests under `/api/v1`.

Reads go to `KNOWLEDGEBASE_URL`, writes to `KNOWLEDGEBASE_WRITE_URL` (the KB runs read and
write pods behind separate Services). Every failure is a `KnowledgeBaseError`; callers decide
whether it matters (for orchestration it never aborts the run).
"""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import BaseModel, Field, ValidationError


class KnowledgeBaseError(RuntimeError):
    """The KB did not answer usefully (down, slow, or a bad response)."""


class KbItem(BaseModel):
    content: str = ""
    score: float = 0.0
    source_urn: str = Field(default="", alias="sourceUrn")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def kind(self) -> str:
        return str(self.metadata.get("kind") or "")


class KbChunk(BaseModel):
    """One row of `POST /chunks/by-kind`: `metadata` holds only the Weaviate properties (§2.3)."""

    content: str = ""
    source_urn: str = Field(default="", alias="sourceUrn")
    metadata: dict[str, Any] = Field(default_factory=dict)


class GraphNode(BaseModel):
    id: str = ""
    key: str = ""
    label: str = ""
    properties: dict[str, Any] = Field(default_factory=dict)


class KnowledgeBaseClient:
    def __init__(self, http: httpx.AsyncClient, read_url: str, write_url: str, *, timeout: float,
                 write_timeout: float = 60.0) -> None:
        self._http = http
        self._read = read_url.rstrip("/") + "/api/v1"
        self._write = write_url.rstrip("/") + "/api/v1"
        self._root = read_url.rstrip("/")
        self._timeout = timeout
        # `/ingest` splits, embeds and stores synchronously: slower than a read.
        self._write_timeout = max(timeout, write_timeout)

    async def retrieve(
        self,
        query: str,
        *,
        client_id: str,
        project_id: str | None,
        max_results: int = 5,
        min_confidence: float = 0.0,
        expand_graph: bool = True,
    ) -> list[KbItem]:
        """Hybrid retrieval (`score` is a rank, top hit = 1.0)."""
        body = {
            "query": query,
            "clientId": client_id or "",
            "projectId": project_id,
            "maxResults": max_results,
            "minConfidence": min_confidence,
            "expandGraph": expand_graph,
        }
        return self._items(await self._request("POST", f"{self._read}/retrieve", json=body))

    async def retrieve_simple(
        self, query: str, *, client_id: str, project_id: str | None, max_results: int = 3
    ) -> list[KbItem]:
        """Vector-only retrieval; `project_id=""` means every project of the client."""
        body = {"query": query, "clientId": client_id or "", "projectId": project_id, "maxResults": max_results}
        return self._items(await self._request("POST", f"{self._read}/retrieve/simple", json=body))

    async def graph_search(
        self,
        *,
        node_type: str,
        client_id: str,
        project_id: str | None,
        limit: int = 20,
        query: str = "",
        branch_name: str | None = None,
    ) -> list[GraphNode]:
        params: dict[str, Any] = {"query": query, "nodeType": node_type, "clientId": client_id or "", "limit": limit}
        if project_id:
            params["projectId"] = project_id
        if branch_name:
            params["branchName"] = branch_name
        data = await self._request("GET", f"{self._read}/graph/search", params=params)
        if not isinstance(data, list):
            raise KnowledgeBaseError("graph/search did not return a list")
        try:
            return [GraphNode.model_validate(node) for node in data]
        except ValidationError as exc:
            raise KnowledgeBaseError(f"graph/search returned bad nodes: {exc}") from exc

    async def chunks_by_kind(
        self, kind: str, *, client_id: str, project_id: str | None, max_results: int = 100
    ) -> list[KbChunk]:
        """Every chunk of one `kind` (a READ route); `project_id` set = that project's rows only."""
        body = {"clientId": client_id or "", "projectId": project_id, "kind": kind, "maxResults": max_results}
        data = await self._request("POST", f"{self._read}/chunks/by-kind", json=body)
        if not isinstance(data, dict) or not isinstance(data.get("chunks"), list):
            raise KnowledgeBaseError("chunks/by-kind response has no 'chunks' list")
        try:
            return [KbChunk.model_validate(chunk) for chunk in data["chunks"]]
        except ValidationError as exc:
            raise KnowledgeBaseError(f"chunks/by-kind returned bad chunks: {exc}") from exc

    async def ingest(
        self,
        *,
        source_urn: str,
        content: str,
        client_id: str,
        project_id: str | None,
        kind: str = "",
        metadata: dict[str, Any] | None = None,
        group_id: str | None = None,
    ) -> dict[str, Any]:
        """Store text on the WRITE service. The real KB drops `metadata` (kb-contract §2.4)."""
        body: dict[str, Any] = {
            "clientId": client_id or "",
            "projectId": project_id,
            "sourceUrn": source_urn,
            "kind": kind,
            "content": content,
            "metadata": metadata or {},
        }
        if group_id:
            body["groupId"] = group_id
        return self._object(await self._request("POST", f"{self._write}/ingest", json=body,
                                                timeout=self._write_timeout), "ingest")

    async def purge(self, source_urn: str) -> dict[str, Any]:
        """Delete every chunk of `source_urn` on the WRITE service (not tenant-scoped in the KB)."""
        return self._object(await self._request("POST", f"{self._write}/purge", json={"sourceUrn": source_urn},
                                                timeout=self._write_timeout), "purge")

    async def health(self) -> dict[str, Any]:
        data = await self._request("GET", f"{self._root}/health")
        return data if isinstance(data, dict) else {}

    async def _request(self, method: str, url: str, *, timeout: float | None = None, **kwargs: Any) -> Any:
        timeout = timeout or self._timeout
        try:
            response = await self._http.request(method, url, timeout=timeout, **kwargs)
            response.raise_for_status()
            return response.json()
        except httpx.TimeoutException as exc:
            raise KnowledgeBaseError(f"KB timed out after {timeout:g} s ({url})") from exc
        except httpx.HTTPStatusError as exc:
            raise KnowledgeBaseError(f"KB answered HTTP {exc.response.status_code} ({url})") from exc
        except (httpx.HTTPError, ValueError) as exc:
            raise KnowledgeBaseError(f"KB unreachable: {type(exc).__name__} ({url})") from exc

    @staticmethod
    def _object(data: Any, route: str) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise KnowledgeBaseError(f"{route} did not return a JSON object")
        return data

    @staticmethod
    def _items(data: Any) -> list[KbItem]:
        if not isinstance(data, dict) or not isinstance(data.get("items"), list):
            raise KnowledgeBaseError("KB response has no 'items' list")
        try:
            return [KbItem.model_validate(item) for item in data["items"]]
        except ValidationError as exc:
            raise KnowledgeBaseError(f"KB returned bad items: {exc}") from exc
