"""What the client sends is what Kotlin sends: the request's every field, the approval body."""

from __future__ import annotations

from typing import Any

import pytest

from app.cli.wire import (
    AUTO_APPROVAL,
    AUTO_CLARIFICATION,
    RuleOverrides,
    approval_body,
    is_rejection,
    kotlin_approved,
    orchestrate_request,
    request_body,
    rules_with,
)
from app.graph.rules.failure_recovery import read_recovery_answer
from app.schemas.domain import RecoveryAction
from app.schemas.kotlin import OrchestrateRequest, ProjectRules
from tests.support import kotlin_rules, orchestrate_body


def body(rules: ProjectRules | None = None) -> dict[str, Any]:
    request = orchestrate_request(task_id="0123abcd" * 4, client_id="cli", project="webshop",
                                  workspace_path="cli/webshop-1a2b3c4d", query="Add /health", rules=rules)
    return request_body(request)


def test_request_body_has_every_kotlin_field_in_order_with_explicit_nulls() -> None:
    sent = body()

    assert list(sent) == list(orchestrate_body())
    assert list(sent["rules"]) == list(kotlin_rules())
    assert sent["rules"] == kotlin_rules()
    assert {k: sent[k] for k in ("client_name", "environment", "jervis_project_id", "chat_history")} == {
        "client_name": None, "environment": None, "jervis_project_id": None, "chat_history": None}
    assert (sent["project_id"], sent["project_name"], sent["agent_preference"]) == ("webshop", "webshop", "auto")
    assert OrchestrateRequest.model_validate(sent).model_dump(exclude={"budget", "new_project"}) == sent


def test_rule_flags_override_kotlin_defaults_and_a_branch_prefix_stays_allowed() -> None:
    rules = rules_with(RuleOverrides(auto_push=True, require_tests=True, require_review=True, max_changed_files=5,
                                     branch_prefix="feature/"))

    sent = body(rules=rules)["rules"]

    assert sent == kotlin_rules(auto_push=True, require_tests=True, require_review=True, max_changed_files=5,
                                branch_naming="feature/{taskId}",
                                allowed_branches=["task/*", "fix/*", "feature/*"])
    assert rules_with(RuleOverrides(branch_prefix="task/")).allowed_branches == ["task/*", "fix/*"]


@pytest.mark.parametrize(("text", "approved"), [
    ("yes", True), ("Ano, commitni to", True), ("APPROVE", True), ("schvaluji", True),
    ("neschvaluji", True),  # Kotlin's substring test; the service reads the refusal itself
    ("no", False), ("ne", False), ("hmm", False), ("", False),
])
def test_approval_body_uses_kotlins_keyword_test(text: str, approved: bool) -> None:
    assert kotlin_approved(text) is approved
    assert approval_body(text, clarification=False) == {"approved": approved, "modification": None, "reason": text}


def test_clarification_answers_are_always_approved_with_the_raw_text() -> None:
    assert approval_body("projekt Webshop", clarification=True) == {
        "approved": True, "modification": None, "reason": "projekt Webshop"}


@pytest.mark.parametrize(("text", "rejected"), [
    ("yes", False), ("ano, ale ne do mastera", False), ("neschvaluji", True), ("no", True), ("ne, bez testů", True),
])
def test_rejection_follows_the_services_reading_of_the_words(text: str, rejected: bool) -> None:
    assert is_rejection(text) is rejected


def test_auto_answers_approve_and_continue() -> None:
    assert not is_rejection(AUTO_APPROVAL)
    read = read_recovery_answer(AUTO_CLARIFICATION)
    assert read is not None and read[0] == RecoveryAction.RETRY  # a recovery question: retry, no LLM needed
