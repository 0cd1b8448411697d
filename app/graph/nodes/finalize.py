"""finalize (spec §7.12): the final report — written by the LLM, or built from facts if it fails."""

from __future__ import annotations

import logging
from typing import Any

from app.graph import chat, prompts
from app.graph.nodes._common import NodeRuntime, changed_files, task_of
from app.graph.state import OrchestratorState
from app.llm.provider import LlmError
from app.llm.scope import current_scope

log = logging.getLogger(__name__)

GIT_NOTES = {
    "commit_rejected": "Commit byl zamítnut uživatelem; změny zůstaly v pracovním adresáři necommitnuté.",
    "push_rejected": "Push byl zamítnut uživatelem; commit zůstal jen lokálně ve větvi {branch}.",
    "committed": "Změny jsou commitnuté ve větvi {branch}.",
    "pushed": "Změny jsou commitnuté a pushnuté ve větvi {branch}.",
    "not_a_repo": "Pracovní adresář není git repozitář; změny nebyly commitnuty.",
    "push_failed": "Push selhal; commit zůstal jen lokálně ve větvi {branch}.",
}


def facts(state: OrchestratorState) -> str:
    lines = [f"Request: {task_of(state)['query']}"]
    for result in state.get("step_results", []):
        mark = "OK" if result.get("success") else "FAILED"
        files = ", ".join(result.get("changed_files", []))
        lines.append(f"- step {result['step_index'] + 1} [{mark}] {result['summary'][:300]}"
                     + (f" (files: {files})" if files else ""))
    if state.get("branch"):
        lines.append(f"Branch: {state['branch']}")
    if state.get("error"):
        lines.append(f"Problem: {state['error']}")
    if count := chat.total_message_count(state):
        lines.append(f"Conversation so far: {count} messages")
    if decisions := chat.key_decisions(state, 5):
        lines.append("Key decisions: " + "; ".join(decisions))
    return "\n".join(lines)


def structured_summary(state: OrchestratorState) -> str:
    """Fallback report without the LLM: every fact, no prose."""
    results = state.get("step_results", [])
    ok = sum(1 for r in results if r.get("success"))
    files = changed_files(state)
    parts = [f"Dokončeno {ok} z {len(results)} kroků."]
    if files:
        parts.append(f"Změněné soubory: {', '.join(files)}.")
    if state.get("error"):
        parts.append(f"Problém: {state['error']}")
    return " ".join(parts)


def git_note(state: OrchestratorState) -> str:
    note = GIT_NOTES.get(state.get("git_outcome") or "", "")
    return note.format(branch=state.get("branch") or "-")


async def finalize(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    summary = state.get("final_result")
    if not summary or state.get("step_results") and any(r.get("step_type") != "respond"
                                                         for r in state["step_results"]):
        try:
            written = (await ctx.llm.complete(
                prompts.finalize(facts=facts(state), language=ctx.settings.response_language))).strip()
        except LlmError as exc:
            log.warning("final report by LLM failed, using the structured one: %s", exc)
            written = ""
        summary = written or structured_summary(state)
        if (budget := current_scope().budget) is not None and budget.total().calls:
            summary = f"{summary}\n\nSpotřeba LLM: {budget.describe()}."
    if note := git_note(state):
        summary = f"{summary}\n\n{note}"
    task = task_of(state)
    ctx.context_store.save_nowait(task["id"], "task", "final", summary[:500],
                                  {"summary": summary, "branch": state.get("branch"),
                                   "artifacts": changed_files(state), "error": state.get("error")})
    return {"final_result": summary, "artifacts": changed_files(state)}
