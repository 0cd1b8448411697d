"""evidence_pack (spec §7.2): KB knowledge, external refs and chat summary, gathered concurrently."""

from __future__ import annotations

import asyncio
from typing import Any

from app.clients.knowledge_base import KnowledgeBaseError
from app.graph import chat
from app.graph.nodes._common import NodeRuntime, task_of
from app.graph.state import OrchestratorState
from app.kb.prefetch import prefetch_kb_context
from app.schemas.domain import EvidencePack


async def evidence_pack(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    task = task_of(state)
    refs = (state.get("external_refs") or [])[:10]

    async def fetch_ref(ref: str) -> dict[str, str] | None:
        items = await ctx.kb.retrieve(ref, client_id=task["client_id"], project_id=task.get("project_id"),
                                      max_results=2, expand_graph=False)
        return {"ref": ref, "content": " / ".join(i.content[:300] for i in items)} if items else None

    kb_context, *ref_results = await asyncio.gather(
        prefetch_kb_context(ctx.kb, query=task["query"], client_id=task["client_id"],
                            project_id=task.get("project_id")),
        *(fetch_ref(ref) for ref in refs),
        return_exceptions=True,
    )
    unknowns = list(state.get("kb_warnings") or [])
    kb_results: list[dict[str, str]] = []
    if isinstance(kb_context, BaseException):
        unknowns.append(f"KB retrieve failed: {kb_context}")
    else:
        kb_results = kb_context.sources
        unknowns += kb_context.warnings
    artifacts = []
    for ref, result in zip(refs, ref_results, strict=True):
        if isinstance(result, KnowledgeBaseError):
            unknowns.append(f"External ref {ref}: {result}")
        elif isinstance(result, BaseException):
            unknowns.append(f"External ref {ref}: {type(result).__name__}")
        elif result is None:
            unknowns.append(f"External ref {ref}: nothing found in KB")
        else:
            artifacts.append(result)
    if unknowns and any("KB" in u for u in unknowns):
        unknowns.append("Knowledge Base unavailable: the run continues without (part of) its context.")
    pack = EvidencePack(
        kb_results=kb_results,
        tracker_artifacts=artifacts,
        chat_history_summary=chat.summary_text(state),
        external_refs=refs,
        facts=[f"Task category: {state.get('task_category')}", f"Action: {state.get('task_action')}"],
        unknowns=unknowns,
    )
    return {"evidence_pack": pack.model_dump()}
