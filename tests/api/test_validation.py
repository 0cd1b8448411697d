"""Bad input gets a readable 422 (never a 500) and changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import approval, orchestrate_body


@pytest.fixture
def client(service: Any) -> httpx.Client:
    with service.client() as http:
        yield http


def without(body: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != key}


@pytest.mark.parametrize(("body", "fragment"), [
    (without(orchestrate_body(), "task_id"), "task_id"),
    (without(orchestrate_body(), "query"), "query"),
    (orchestrate_body(query=""), "query"),
    (orchestrate_body(task_id="abc-def"), "task_id"),
    (orchestrate_body(workspace_path="../etc"), "workspace_path"),
    (orchestrate_body(workspace_path="clients/../../etc"), "workspace_path"),
    (orchestrate_body(workspace_path="/etc"), "workspace_path"),
    (orchestrate_body(agent_preference="gpt-engineer"), "agent_preference"),
    (orchestrate_body(rules={"max_changed_files": "many"}), "rules.max_changed_files"),
    (orchestrate_body(chat_history={"summary_blocks": []}), "chat_history.recent_messages"),
])
def test_orchestrate_rejects_bad_bodies_with_readable_422(client, kotlin, body, fragment) -> None:
    for path in ("/orchestrate/stream", "/orchestrate"):
        response = client.post(path, json=body)
        assert response.status_code == 422, response.text
        assert fragment in response.json()["detail"]
    assert kotlin.progress == [] and kotlin.statuses == []


def test_orchestrate_rejects_non_json_body(client) -> None:
    response = client.post("/orchestrate/stream", content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert "json" in response.json()["detail"].lower()


def test_workspace_symlink_escaping_data_root_is_rejected(client, data_root: Path, tmp_path: Path, kotlin) -> None:
    (data_root / "clients").mkdir(exist_ok=True)
    link = data_root / "clients" / f"escape-{tmp_path.name}"
    link.symlink_to(tmp_path, target_is_directory=True)

    response = client.post("/orchestrate/stream", json=orchestrate_body(workspace_path=f"clients/{link.name}"))

    assert response.status_code == 422 and "escapes DATA_ROOT" in response.json()["detail"]
    assert kotlin.progress == []


def test_orchestrate_accepts_unknown_keys_and_explicit_nulls(client, llm, kotlin) -> None:
    body = orchestrate_body(rules=None, agent_preference=None, some_future_field={"x": 1})
    response = client.post("/orchestrate/stream", json=body)
    assert response.status_code == 200, response.text
    kotlin.wait_for_status(thread_id=response.json()["thread_id"])


@pytest.mark.parametrize("body", [{}, {"approved": "maybe"}, {"reason": "ano"}])
def test_approve_rejects_bad_bodies(client, body) -> None:
    response = client.post("/approve/thread-x-00000000", json=body)
    assert response.status_code == 422 and "approved" in response.json()["detail"]


def test_approve_unknown_thread_is_404(client) -> None:
    response = client.post("/approve/thread-nothere-00000000", json=approval(True, "ano"))
    assert response.status_code == 404


def test_cancel_unknown_thread_is_404(client) -> None:
    response = client.post("/cancel/thread-nothere-00000000", headers={"Content-Type": "application/json"})
    assert response.status_code == 404 and "No active task" in response.json()["detail"]


def test_stream_rejects_non_integer_last_event_id(client, llm, kotlin) -> None:
    thread_id = client.post("/orchestrate/stream", json=orchestrate_body()).json()["thread_id"]
    kotlin.wait_for_status(thread_id=thread_id)
    response = client.get(f"/stream/{thread_id}", headers={"Last-Event-ID": "abc"})
    assert response.status_code == 422
