"""Wire DTOs of the Kotlin contract (app/schemas/kotlin.py, `docs/api.md`)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pydantic import ValidationError

from app.schemas.kotlin import (
    ApprovalResponse,
    OrchestrateRequest,
    ProgressPush,
    ProjectRules,
    StatusPush,
    status_reply,
)
from tests.fixtures.kotlin_server import DTOS, PROGRESS, STATUS, validate_dto

#: `docs/api.md`, "A request exactly as Kotlin sends it".
KOTLIN_BODY: dict[str, Any] = json.loads("""
{
  "task_id": "67ad0f1e2b3c4d5e6f708192",
  "client_id": "67a9b1c2d3e4f5a6b7c8d9e0",
  "project_id": "67a9b1c2d3e4f5a6b7c8d9e1",
  "client_name": "Acme",
  "project_name": "webshop",
  "workspace_path": "clients/67a9b1c2d3e4f5a6b7c8d9e0/67a9b1c2d3e4f5a6b7c8d9e1",
  "query": "Přidej endpoint /health do API",
  "agent_preference": "auto",
  "rules": {
    "branch_naming": "task/{taskId}", "commit_prefix": "task({taskId}):",
    "require_review": false, "require_tests": false,
    "require_approval_commit": true, "require_approval_push": true,
    "allowed_branches": ["task/*", "fix/*"], "forbidden_files": ["*.env", "secrets/*"],
    "max_changed_files": 20, "auto_push": false,
    "auto_use_anthropic": false, "auto_use_openai": false, "auto_use_gemini": false
  },
  "environment": {
    "namespace": "env-webshop", "groupId": null, "agentInstructions": null,
    "components": [{"id": "c1", "name": "postgres", "type": "DATABASE", "image": "postgres:16",
      "projectId": null, "host": "postgres.env-webshop.svc.cluster.local",
      "ports": [{"container": 5432, "service": 5432, "name": "pg"}],
      "envVars": {"POSTGRES_DB": "shop"}, "autoStart": true, "startOrder": 0}],
    "componentLinks": []
  },
  "jervis_project_id": "67a9b1c2d3e4f5a6b7c8d9ff",
  "chat_history": {
    "recent_messages": [
      {"role": "user", "content": "Přidej endpoint /health do API",
       "timestamp": "2026-02-13T09:15:30.123Z", "sequence": 1}
    ],
    "summary_blocks": [],
    "total_message_count": 1
  }
}
""")

#: The same chat without a project: explicit nulls everywhere Kotlin has no value (§2.2).
NULLS_BODY = KOTLIN_BODY | {
    "project_id": None, "project_name": None, "client_name": None,
    "workspace_path": "clients/67a9b1c2d3e4f5a6b7c8d9e0/default", "environment": None,
    "jervis_project_id": None, "chat_history": None,
}


def body(**changes: Any) -> dict[str, Any]:
    return copy.deepcopy(KOTLIN_BODY) | changes


def test_orchestrate_request_accepts_the_full_kotlin_example() -> None:
    request = OrchestrateRequest.model_validate(body())
    assert (request.task_id, request.client_id, request.project_id) == (
        "67ad0f1e2b3c4d5e6f708192", "67a9b1c2d3e4f5a6b7c8d9e0", "67a9b1c2d3e4f5a6b7c8d9e1")
    assert request.rules == ProjectRules()
    assert request.environment is not None and request.environment["components"][0]["ports"][0]["service"] == 5432
    assert request.chat_history is not None
    assert request.chat_history.recent_messages[0].sequence == 1
    assert request.chat_history.total_message_count == 1
    assert request.jervis_project_id == "67a9b1c2d3e4f5a6b7c8d9ff"


def test_orchestrate_request_accepts_explicit_nulls_when_chat_has_no_project() -> None:
    request = OrchestrateRequest.model_validate(copy.deepcopy(NULLS_BODY))
    assert request.project_id is None and request.environment is None and request.chat_history is None
    assert request.workspace_path.endswith("/default")


def test_orchestrate_request_ignores_unknown_keys_at_every_level() -> None:
    data = body(future_field={"x": 1})
    data["rules"]["new_rule"] = True
    data["chat_history"]["recent_messages"][0]["attachments"] = []
    data["chat_history"]["brand_new"] = None
    request = OrchestrateRequest.model_validate(data)
    assert "future_field" not in request.model_dump()
    assert request.rules == ProjectRules()


def test_orchestrate_request_uses_default_rules_when_rules_is_null() -> None:
    request = OrchestrateRequest.model_validate(body(rules=None))
    assert request.rules == ProjectRules()
    assert request.rules.forbidden_files == ["*.env", "secrets/*"]
    assert request.rules.require_approval_commit is True


def test_orchestrate_request_uses_auto_when_agent_preference_is_null() -> None:
    assert OrchestrateRequest.model_validate(body(agent_preference=None)).agent_preference == "auto"


def test_orchestrate_request_normalises_agent_preference_and_rejects_unknown_agents() -> None:
    assert OrchestrateRequest.model_validate(body(agent_preference=" Claude ")).agent_preference == "claude"
    with pytest.raises(ValidationError, match="agent_preference"):
        OrchestrateRequest.model_validate(body(agent_preference="gpt-7"))


def test_orchestrate_request_defaults_null_summary_blocks_and_count() -> None:
    data = body()
    data["chat_history"] |= {"summary_blocks": None, "total_message_count": None}
    history = OrchestrateRequest.model_validate(data).chat_history
    assert history is not None and history.summary_blocks == [] and history.total_message_count == 0


@pytest.mark.parametrize("task_id", ["67ad-0f1e", "a/b", "has space", ""])
def test_orchestrate_request_rejects_task_id_when_it_would_break_the_thread_id(task_id: str) -> None:
    with pytest.raises(ValidationError, match="task_id"):
        OrchestrateRequest.model_validate(body(task_id=task_id))


@pytest.mark.parametrize("path", ["../x", "/abs", "a/../../b", "clients/..", "", "  ", "\\\\server\\share"])
def test_orchestrate_request_rejects_workspace_path_when_it_escapes_data_root(path: str) -> None:
    with pytest.raises(ValidationError, match="workspace_path"):
        OrchestrateRequest.model_validate(body(workspace_path=path))


@pytest.mark.parametrize("missing", ["task_id", "client_id", "workspace_path", "query"])
def test_orchestrate_request_requires_kotlins_required_fields(missing: str) -> None:
    data = body()
    del data[missing]
    with pytest.raises(ValidationError, match=missing):
        OrchestrateRequest.model_validate(data)


def test_orchestrate_request_requires_recent_messages_in_chat_history() -> None:
    data = body()
    del data["chat_history"]["recent_messages"]
    with pytest.raises(ValidationError, match="recent_messages"):
        OrchestrateRequest.model_validate(data)


def test_approval_response_accepts_kotlins_body_with_explicit_nulls() -> None:
    response = ApprovalResponse.model_validate({"approved": True, "modification": None, "reason": "ano, commitni to"})
    assert (response.approved, response.modification, response.reason) == (True, None, "ano, commitni to")


def test_approval_response_requires_approved() -> None:
    with pytest.raises(ValidationError, match="approved"):
        ApprovalResponse.model_validate({"modification": None, "reason": "ano"})


PROGRESS_KEYS = {"taskId", "clientId", "node", "message", "percent", "goalIndex", "totalGoals", "stepIndex",
                 "totalSteps"}
STATUS_KEYS = {"taskId", "clientId", "threadId", "status", "summary", "error", "interruptAction",
               "interruptDescription", "branch", "artifacts"}


def test_progress_push_wire_has_exactly_the_contract_keys_with_int_indices() -> None:
    push = ProgressPush(task_id="t1", client_id="c1", node="plan", message="Plánuji…",
                        goal_index=1.0, total_goals=3, step_index=2, total_steps=4)  # type: ignore[arg-type]
    wire = push.wire()
    assert set(wire) == PROGRESS_KEYS
    assert wire == {"taskId": "t1", "clientId": "c1", "node": "plan", "message": "Plánuji…", "percent": 0.0,
                    "goalIndex": 1, "totalGoals": 3, "stepIndex": 2, "totalSteps": 4}
    assert all(type(wire[k]) is int for k in ("goalIndex", "totalGoals", "stepIndex", "totalSteps"))
    assert '"goalIndex": 1,' in json.dumps(wire)  # never 1.0: Kotlin's Int rejects it
    assert validate_dto(wire, DTOS[PROGRESS]) == []


def test_status_push_wire_has_exactly_the_contract_keys_and_a_list_of_artifacts() -> None:
    wire = StatusPush(task_id="t1", thread_id="thread-t1-abcd", status="done").wire()
    assert set(wire) == STATUS_KEYS
    assert wire["artifacts"] == [] and wire["clientId"] == ""
    assert wire["summary"] is None and wire["branch"] is None
    assert validate_dto(wire, DTOS[STATUS]) == []


def test_status_push_wire_carries_interrupt_fields_in_camel_case() -> None:
    wire = StatusPush(task_id="t1", client_id="c1", thread_id="th", status="interrupted",
                      interrupt_action="commit", interrupt_description="Commit 1 file",
                      branch="task/t1", artifacts=["app/a.py"]).wire()
    assert (wire["interruptAction"], wire["interruptDescription"], wire["artifacts"]) == (
        "commit", "Commit 1 file", ["app/a.py"])
    assert not any("_" in key for key in wire)
    assert validate_dto(wire, DTOS[STATUS]) == []


def test_status_reply_makes_every_value_a_string() -> None:
    reply = status_reply("thread-t1-abcd", "done", summary="Hotovo", branch=None, error=None,
                         artifacts=["a.kt", "b.kt"], busy=False, ok=True, count=3, ratio=0.5, empty=[])
    assert reply == {"status": "done", "thread_id": "thread-t1-abcd", "summary": "Hotovo", "artifacts": "a.kt,b.kt",
                     "busy": "false", "ok": "true", "count": "3", "ratio": "0.5", "empty": ""}
    assert all(isinstance(v, str) for v in reply.values())


def test_status_reply_drops_none_values() -> None:
    assert status_reply("th", "running", error=None, summary=None) == {"status": "running", "thread_id": "th"}
