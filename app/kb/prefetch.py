"""KB context for the orchestrator (intake) and for coding agents (spec §9.1).

All KB calls of one fetch run concurrently, and every failure becomes a warning instead of an
exception: the original service aborted the whole run at intake when the KB was down.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.clients.knowledge_base import GraphNode, KbItem, KnowledgeBaseClient, KnowledgeBaseError

MAX_CHARS = 6000


@dataclass
class KbContext:
    text: str = ""
    sources: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


async def _gather(calls: dict[str, Awaitable[Any]]) -> tuple[dict[str, Any], list[str]]:
    results = await asyncio.gather(*calls.values(), return_exceptions=True)
    values: dict[str, Any] = {}
    warnings: list[str] = []
    for name, result in zip(calls, results, strict=True):
        if isinstance(result, KnowledgeBaseError):
            warnings.append(f"KB {name}: {result}")
        elif isinstance(result, BaseException):
            warnings.append(f"KB {name}: {type(result).__name__}: {result}")
        else:
            values[name] = result
    return values, warnings


def _section(title: str, items: Sequence[KbItem], limit: int) -> str:
    if not items:
        return ""
    lines = [f"## {title}"]
    lines += [f"- [{item.source_urn or 'kb'}] {item.content[:limit].strip()}" for item in items]
    return "\n".join(lines)


def _structure(nodes: Sequence[GraphNode]) -> str:
    if not nodes:
        return ""
    lines = ["## Project structure"]
    for node in nodes:
        kind = node.properties.get("type", "")
        path = node.properties.get("path") or node.properties.get("filePath") or ""
        lines.append(f"- {kind} {node.label} {path}".rstrip())
    return "\n".join(lines)


def _sources(*groups: Sequence[KbItem]) -> list[dict[str, str]]:
    return [
        {"source": item.source_urn, "content": item.content[:300]}
        for group in groups
        for item in group
    ]


async def fetch_project_context(
    kb: KnowledgeBaseClient, *, query: str, client_id: str, project_id: str | None
) -> KbContext:
    """Orchestrator view: structure, architecture, conventions and task-relevant knowledge."""
    calls: dict[str, Awaitable[Any]] = {
        "files": kb.graph_search(node_type="file", client_id=client_id, project_id=project_id, limit=50),
        "conventions": kb.retrieve_simple(
            "coding conventions and style guidelines", client_id=client_id, project_id="", max_results=3
        ),
        "task": kb.retrieve(query, client_id=client_id, project_id=project_id, max_results=5, min_confidence=0.6),
    }
    if project_id:
        calls["architecture"] = kb.retrieve(
            "architecture modules and components", client_id=client_id, project_id=project_id, max_results=5
        )
    values, warnings = await _gather(calls)
    parts = [
        _structure(values.get("files", [])[:30]),
        _section("Architecture", values.get("architecture", []), 400),
        _section("Conventions", values.get("conventions", []), 300),
        _section("Relevant knowledge", values.get("task", []), 400),
    ]
    text = "\n\n".join(p for p in parts if p)[:MAX_CHARS]
    sources = _sources(values.get("task", []), values.get("architecture", []))
    return KbContext(text=text, sources=sources, warnings=warnings)


class ProjectContextPrefetch:
    """intake's KB lookup (`fetch_project_context`), started as soon as a run is dispatched.

    It depends on the request alone, and a new run spends its first tens of milliseconds writing
    its first two checkpoints before intake starts: the run driver starts the lookup then, and
    intake takes its result. intake fetches for itself when nothing was started for the thread
    (a resumed or adopted run, a segment repeated after a MongoDB outage)."""

    def __init__(self) -> None:
        self._running: dict[str, asyncio.Task[KbContext]] = {}

    def start(self, thread_id: str, kb: KnowledgeBaseClient, *, query: str, client_id: str,
              project_id: str | None) -> asyncio.Task[KbContext]:
        self.discard(thread_id)
        task = asyncio.create_task(fetch_project_context(kb, query=query, client_id=client_id, project_id=project_id),
                                   name=f"kb-prefetch:{thread_id}")
        self._running[thread_id] = task
        return task

    def take(self, thread_id: str) -> asyncio.Task[KbContext] | None:
        """The lookup started for the thread, once (None when there is none)."""
        return self._running.pop(thread_id, None)

    def discard(self, thread_id: str) -> None:
        """The segment ended: a lookup intake never took is cancelled."""
        task = self._running.pop(thread_id, None)
        if task is not None:
            task.cancel()


async def prefetch_kb_context(
    kb: KnowledgeBaseClient,
    *,
    query: str,
    client_id: str,
    project_id: str | None,
    files: Sequence[str] = (),
) -> KbContext:
    """Agent view (written to `.jervis/kb-context.md`): knowledge, conventions, file notes."""
    calls: dict[str, Awaitable[Any]] = {
        "relevant": kb.retrieve(query, client_id=client_id, project_id=project_id, max_results=5, min_confidence=0.7),
        "conventions": kb.retrieve_simple(
            "coding conventions and style guidelines", client_id=client_id, project_id="", max_results=3
        ),
    }
    if project_id:
        calls["architecture"] = kb.retrieve_simple(
            "architecture decisions", client_id=client_id, project_id=project_id, max_results=3
        )
    for path in list(files)[:3]:
        calls[f"file {path}"] = kb.retrieve_simple(
            f"file {path} implementation notes", client_id=client_id, project_id=project_id, max_results=2
        )
    values, warnings = await _gather(calls)
    parts = [
        _section("Relevant knowledge", values.get("relevant", []), 300),
        _section("Coding conventions", values.get("conventions", []), 200),
        _section("Architecture decisions", values.get("architecture", []), 200),
        *(_section(name.capitalize(), items, 200) for name, items in values.items() if name.startswith("file ")),
    ]
    text = "\n\n".join(p for p in parts if p)[:MAX_CHARS]
    return KbContext(text=text, sources=_sources(values.get("relevant", [])), warnings=warnings)
