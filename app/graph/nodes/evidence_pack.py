"""evidence_pack (spec §7.2): KB knowledge, external refs, chat summary and how the previous
request of the same chat ended (its run's final entry in the context store).

The task-relevant KB hits were already fetched by intake (same query), so they are reused;
only the external references are looked up here, concurrently.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

from app.graph import chat
from app.graph.run_state import NodeRuntime, run_key, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Intake
from app.schemas.domain import EvidencePack
from app.texts.clip import clip

log = logging.getLogger(__name__)
#: The previous request's end, as the planners and answers of this one read it.
EARLIER_RUN_CHARS = 800
KB_UNAVAILABLE = "Knowledge Base unavailable: the run continues without (part of) its context."


async def evidence_pack(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    task = task_of(state)
    refs = (Intake.of(state).external_refs or [])[:10]

    async def fetch_ref(ref: str) -> dict[str, str] | None:
        items = await ctx.kb.retrieve(ref, client_id=task["client_id"], project_id=task.get("project_id"),
                                      max_results=2, expand_graph=False)
        return {"ref": ref, "content": " / ".join(i.content[:300] for i in items)} if items else None

    results = await asyncio.gather(*(fetch_ref(ref) for ref in refs), return_exceptions=True)
    unknowns = list(Intake.of(state).kb_warnings or [])
    artifacts = []
    for ref, result in zip(refs, results, strict=True):
        if isinstance(result, BaseException):
            unknowns.append(f"External ref {ref}: {result}")
        elif result is None:
            unknowns.append(f"External ref {ref}: nothing found in KB")
        else:
            artifacts.append(result)
    if any(u.startswith("KB ") or "KB " in u for u in unknowns):
        unknowns.append(KB_UNAVAILABLE)
    try:  # the context store is an aid: a run goes on without the previous request's end
        earlier = await ctx.context_store.previous_final(task["id"], before_run=run_key(state))
    except Exception:
        log.warning("context store: the previous run of chat %s could not be read", task["id"], exc_info=True)
        earlier = None
    pack = EvidencePack(
        kb_results=list(cast("list[dict[str, str]]", Intake.of(state).kb_results or [])),  # KbHit: the typed form
        tracker_artifacts=artifacts,
        chat_history_summary=chat.summary_text(state),
        external_refs=refs,
        facts=[f"Task category: {Intake.of(state).task_category}", f"Action: {Intake.of(state).task_action}"],
        unknowns=unknowns,
        earlier_run=clip(earlier.detail.get("summary") or earlier.summary, EARLIER_RUN_CHARS) if earlier else "",
    )
    return {"evidence_pack": pack.model_dump()}
