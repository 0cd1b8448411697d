"""What the Kotlin server would send: the orchestrate request and the approval body.

Built from the service's own DTOs (`app.schemas.kotlin`), so the shapes cannot drift: every
field present, explicit nulls, snake_case (kotlin-contract.md §0.2, §2.2, §2.3).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from app.graph.rules.approval import interpret_approval, is_approved
from app.schemas.kotlin import ApprovalResponse, OrchestrateRequest, ProjectRules

#: Kotlin's approval test: a substring of the lower-cased answer (contract §0.8).
APPROVAL_WORDS = ("ano", "yes", "approve", "schval")
#: What `--yes` answers to approval gates.
AUTO_APPROVAL = "yes"
#: What `--yes` answers to questions. The service reads it as "go on": intake classifies again
#: with it as the clarification (nothing new, so it decides with what it has), and a recovery
#: question reads "pokračuj" as retry — bounded, since a second question about the same
#: exhausted step becomes a stop.
AUTO_CLARIFICATION = "Pokračuj podle svého uvážení (continue with your best judgement)."
#: Fields Kotlin's `OrchestrateRequestDto` has; `budget` is ours and Kotlin never sends it.
KOTLIN_FIELDS = ("task_id", "client_id", "project_id", "client_name", "project_name", "workspace_path",
                 "query", "agent_preference", "rules", "environment", "jervis_project_id", "chat_history")


@dataclass(frozen=True)
class RuleOverrides:
    """The rules a user may set from the command line; None keeps Kotlin's default."""

    auto_push: bool | None = None
    require_tests: bool | None = None
    require_review: bool | None = None
    max_changed_files: int | None = None
    branch_prefix: str | None = None


def new_task_id() -> str:
    """uuid4 hex: unique, and free of the '-' the thread id is split on."""
    return uuid.uuid4().hex


def rules_with(overrides: RuleOverrides) -> ProjectRules:
    """Kotlin's default rules with the user's flags applied. A custom branch prefix is also
    allowed as a branch pattern, or git_operations would refuse its own branch."""
    rules = ProjectRules()
    changes: dict[str, Any] = {
        name: value for name in ("auto_push", "require_tests", "require_review", "max_changed_files")
        if (value := getattr(overrides, name)) is not None
    }
    if overrides.branch_prefix:
        prefix = overrides.branch_prefix
        changes["branch_naming"] = f"{prefix}{{taskId}}"
        pattern = f"{prefix}*"
        if pattern not in rules.allowed_branches:
            changes["allowed_branches"] = [*rules.allowed_branches, pattern]
    return ProjectRules.model_validate(rules.model_dump() | changes)


def orchestrate_request(*, task_id: str, client_id: str, project: str, workspace_path: str, query: str,
                        agent: str = "auto", rules: ProjectRules | None = None) -> OrchestrateRequest:
    """A request as Kotlin builds one for a project without chat history or environment."""
    return OrchestrateRequest(
        task_id=task_id, client_id=client_id, project_id=project, client_name=None, project_name=project,
        workspace_path=workspace_path, query=query, agent_preference=agent, rules=rules or ProjectRules(),
        environment=None, jervis_project_id=None, chat_history=None,
    )


def request_body(request: OrchestrateRequest) -> dict[str, Any]:
    """The JSON Kotlin would send: its fields only, in its order, nulls included."""
    dumped = request.model_dump(mode="json")
    return {name: dumped[name] for name in KOTLIN_FIELDS}


def kotlin_approved(text: str) -> bool:
    """Kotlin's flag for a non-clarification answer (so "neschvaluji" counts as approved; the
    service reads the words and treats that as a refusal)."""
    lowered = text.lower()
    return any(word in lowered for word in APPROVAL_WORDS)


def approval_body(text: str, *, clarification: bool) -> dict[str, Any]:
    """`ApprovalResponseDto` exactly as Kotlin sends it: approved, null modification, raw text."""
    approved = True if clarification else kotlin_approved(text)
    return ApprovalResponse(approved=approved, modification=None, reason=text).model_dump()


def is_rejection(text: str) -> bool:
    """Whether the service will read a gate answer as "no": its own deterministic reading of the
    words ("ano, ale ne do mastera" approves with a condition, "neschvaluji" refuses), else an
    explicit yes among them (what it falls back to without an LLM; never Kotlin's flag alone)."""
    decision = {"approved": kotlin_approved(text), "modification": None, "reason": text}
    read = interpret_approval(decision)
    return not (read.approved if read is not None else is_approved(decision))
