"""The contexts prompts are built from: who the run is for, what the evidence pack found, the
conversation and the user's clarification and conditions (answers and plans read them)."""

from __future__ import annotations

from app.agents.workspace import render_environment
from app.graph import chat
from app.graph.run_state import task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Inputs, Intake, UserTerms

CONVERSATION_CHARS = 3000


def identity(state: OrchestratorState) -> str:
    task = task_of(state)
    client = task.get("client_name") or task["client_id"]
    project = task.get("project_name") or task.get("project_id") or "-"
    return f"Client: {client}; project: {project}"


def evidence_text(state: OrchestratorState, limit: int = 3000) -> str:
    pack = Intake.of(state).evidence_pack
    if not pack:
        return ""
    lines = [f"Earlier in this conversation (how the previous request ended): {pack['earlier_run']}"
             ] if pack.get("earlier_run") else []
    lines += [f"- [{r.get('source', '')}] {r.get('content', '')}" for r in pack.get("kb_results", [])]
    lines += [f"- {a.get('ref', '')}: {a.get('content', '')}" for a in pack.get("tracker_artifacts", [])]
    if pack.get("unknowns"):
        lines.append("Unknowns: " + "; ".join(pack["unknowns"]))
    return "\n".join(lines)[:limit]


def clarification_text(state: OrchestratorState) -> str | None:
    response = Intake.of(state).clarification_response
    return (response.get("answer") if response else None) or None


def answer_context(state: OrchestratorState) -> str:
    """What respond and answer steps reply from: identity, KB, the whole conversation."""
    parts = [
        identity(state),
        Intake.of(state).project_context or "",
        evidence_text(state),
        chat.full_conversation(state),
        f"User's clarification: {c}" if (c := clarification_text(state)) else "",
        render_environment(Inputs.of(state).environment) if Inputs.of(state).environment else "",
    ]
    return "\n\n".join(p for p in parts if p)


def planning_context(state: OrchestratorState) -> str:
    """What planners see: identity, KB, the conversation (bounded, newest kept) and the user's
    conditions, so "the same as yesterday, but for the orders endpoint" can be planned."""
    conversation = chat.full_conversation(state)
    if len(conversation) > CONVERSATION_CHARS:
        conversation = "…" + conversation[-CONVERSATION_CHARS:]
    conditions = UserTerms.of(state).user_conditions or []
    parts = [identity(state), Intake.of(state).project_context or "", evidence_text(state),
             f"Conversation:\n{conversation}" if conversation else "",
             f"User's clarification: {c}" if (c := clarification_text(state)) else "",
             "User's conditions: " + "; ".join(conditions) if conditions else ""]
    return "\n\n".join(p for p in parts if p)
