"""Request limits (app/api/limits.py) on the in-process app: 413 for a body over the route's limit
(declared or streamed), 422 for deep nesting and over-long text, and Kotlin-sized bodies pass.

The app runs without its lifespan; the services the routes call are recording stand-ins injected
through FastAPI's dependency overrides, so a refused request is seen to reach nothing."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.api.deps import get_correction_service, get_run_manager, get_settings
from app.api.limits import json_depth_exceeds
from app.config import Settings
from app.main import create_app
from app.schemas.correction import CorrectionRequest, CorrectionResult
from app.schemas.kotlin import ApprovalResponse, OrchestrateRequest
from tests.support import orchestrate_body

MIB = 1 << 20


@dataclass
class RecordingRuns:
    started: list[OrchestrateRequest] = field(default_factory=list)
    resumed: list[ApprovalResponse] = field(default_factory=list)

    async def start(self, request: OrchestrateRequest) -> Any:
        self.started.append(request)
        return SimpleNamespace(identity=SimpleNamespace(thread_id=f"thread-{request.task_id}-00000000"))

    async def resume(self, thread_id: str, approval: ApprovalResponse) -> Any:
        self.resumed.append(approval)
        return object()


@dataclass
class RecordingCorrection:
    corrected: list[CorrectionRequest] = field(default_factory=list)

    async def correct(self, request: CorrectionRequest) -> CorrectionResult:
        self.corrected.append(request)
        return CorrectionResult(segments=request.segments, status="success")


@dataclass
class LimitedApp:
    app: FastAPI
    runs: RecordingRuns
    correction: RecordingCorrection


def limited_app(settings: Settings) -> LimitedApp:
    app = create_app(settings)
    runs, correction = RecordingRuns(), RecordingCorrection()
    app.dependency_overrides[get_settings] = lambda: settings
    app.dependency_overrides[get_run_manager] = lambda: runs
    app.dependency_overrides[get_correction_service] = lambda: correction
    return LimitedApp(app, runs, correction)


@pytest.fixture
def app_under_test() -> LimitedApp:
    return limited_app(Settings())


@pytest.fixture
async def client(app_under_test: LimitedApp) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app_under_test.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://[::1]") as http:
        yield http


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


def kotlin_environment() -> dict[str, Any]:
    """`EnvironmentDocument.toAgentContextJson()` with ten components (docs/api.md)."""
    component = {"id": "c1", "name": "postgres", "type": "DATABASE", "image": "postgres:16", "projectId": None,
                 "host": "postgres.env-webshop.svc.cluster.local",
                 "ports": [{"container": 5432, "service": 5432, "name": "pg"}],
                 "envVars": {"POSTGRES_DB": "shop"}, "autoStart": True, "startOrder": 0}
    return {"namespace": "env-webshop", "groupId": None, "agentInstructions": "Use the staging database. " * 40,
            "components": [component | {"id": f"c{i}"} for i in range(10)],
            "componentLinks": [{"source": "c1", "target": "c2", "description": "reads"}]}


def kotlin_chat_history(message_chars: int) -> dict[str, Any]:
    """The most Kotlin sends: the last 20 messages and 15 summary blocks."""
    messages = [{"role": "user" if i % 2 else "assistant",
                 "content": "Přidej endpoint /health. " * (message_chars // 25),
                 "timestamp": "2026-02-13T09:15:30.123Z", "sequence": i} for i in range(20)]
    blocks = [{"sequence_range": f"{i * 20 + 1}-{i * 20 + 20}", "summary": "Uživatel řešil API. " * 100,
               "key_decisions": ["použít FastAPI"] * 5, "topics": ["API"], "is_checkpoint": False,
               "checkpoint_reason": None} for i in range(15)]
    return {"recent_messages": messages, "summary_blocks": blocks, "total_message_count": 320}


def transcript(hours: float) -> list[dict[str, Any]]:
    """Whisper segments of a meeting: about one every 3.6 s."""
    return [{"i": i, "startSec": i * 3.6, "endSec": i * 3.6 + 3.4,
             "text": "Dobrý den, tady Jan Damek z Acme, k té migraci.", "speaker": f"SPEAKER_{i % 4:02d}"}
            for i in range(int(hours * 1000))]


# ------------------------------------------------------------------ 413
async def test_body_over_the_limit_with_content_length_is_413_and_reaches_nothing(client, app_under_test) -> None:
    body = json.dumps(orchestrate_body(query="x" * (10 * MIB))).encode()

    response = await client.post("/orchestrate/stream", content=body, headers={"Content-Type": "application/json"})

    assert response.status_code == 413
    assert response.json() == {"detail": f"request body larger than {4 * MIB} bytes (MAX_BODY_BYTES)"}
    assert app_under_test.runs.started == []


async def test_streamed_body_without_content_length_is_refused_without_being_buffered(client, app_under_test) -> None:
    async def ten_megabytes() -> AsyncIterator[bytes]:
        yield b'{"query": "'
        for _ in range(40):
            yield b" " * (256 << 10)  # a new chunk each time: held only if the receiver keeps it
        yield b'"}'

    tracemalloc.start()
    try:
        response = await client.post("/orchestrate/stream", content=ten_megabytes(),
                                     headers={"Content-Type": "application/json"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert response.status_code == 413 and "MAX_BODY_BYTES" in response.json()["detail"]
    assert peak < 4 * MIB + 2 * MIB  # at most the limit was held, never the 10 MB
    assert app_under_test.runs.started == []


async def test_bulk_routes_have_their_own_limit() -> None:
    small = limited_app(Settings(max_body_bytes=64 << 10, max_bulk_body_bytes=256 << 10))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=small.app), base_url="http://[::1]") as http:
        meeting = {"clientId": "67a9b1c2d3e4f5a6b7c8d9e0", "meetingId": None, "segments": transcript(0.5)}
        accepted = await http.post("/correction/correct", json=meeting)  # ~100 KB: over the default, under bulk
        refused = await http.post("/correction/correct", json=meeting | {"segments": transcript(2)})

    assert accepted.status_code == 200, accepted.text
    assert refused.status_code == 413 and "MAX_BULK_BODY_BYTES" in refused.json()["detail"]
    assert len(small.correction.corrected) == 1


# ------------------------------------------------------------------ 422
async def test_deeply_nested_environment_is_422_before_validation(client, app_under_test) -> None:
    response = await client.post("/orchestrate/stream", json=orchestrate_body(environment={"x": nested(200)}))

    assert response.status_code == 422
    assert response.json()["detail"] == "body: JSON nested deeper than 32 levels (MAX_JSON_DEPTH)"
    assert app_under_test.runs.started == []


async def test_nesting_far_past_the_json_parsers_own_limit_is_still_a_readable_422(client) -> None:
    response = await client.post("/orchestrate/stream", content=b"[" * 100_000 + b"]" * 100_000,
                                 headers={"Content-Type": "application/json"})

    assert response.status_code == 422 and "MAX_JSON_DEPTH" in response.json()["detail"]


async def test_query_longer_than_max_text_chars_is_422_naming_the_field(client, app_under_test) -> None:
    response = await client.post("/orchestrate/stream", json=orchestrate_body(query="x" * 1_000_001))

    assert response.status_code == 422
    detail = response.json()["detail"]
    assert detail.startswith("query: String should have at most 1000000 characters") and "MAX_TEXT_CHARS" in detail
    assert app_under_test.runs.started == []


@pytest.mark.parametrize("field", ["task_id", "client_id", "jervis_project_id"])
async def test_identifier_longer_than_200_characters_is_422(client, app_under_test, field: str) -> None:
    response = await client.post("/orchestrate/stream", json=orchestrate_body(**{field: "a" * 201}))

    assert response.status_code == 422
    assert response.json()["detail"].startswith(f"{field}: String should have at most 200")
    assert app_under_test.runs.started == []


async def test_approval_text_longer_than_max_text_chars_is_422(client, app_under_test) -> None:
    response = await client.post("/approve/thread-t1-00000000",
                                 json={"approved": True, "modification": None, "reason": "ano " * 260_000})

    assert response.status_code == 422 and response.json()["detail"].startswith("reason: String should have")
    assert app_under_test.runs.resumed == []


# ------------------------------------------------------------------ what Kotlin sends passes
async def test_the_largest_body_kotlin_sends_to_orchestrate_is_accepted(client, app_under_test) -> None:
    body = orchestrate_body(query="Přidej endpoint /health do API. " * 3000, environment=kotlin_environment(),
                            chat_history=kotlin_chat_history(message_chars=50_000))
    assert len(json.dumps(body).encode()) > 1 * MIB  # 20 long messages: still far under 4 MiB

    response = await client.post("/orchestrate/stream", json=body)

    assert response.status_code == 200, response.text
    [started] = app_under_test.runs.started
    assert started.environment == body["environment"] and len(started.chat_history.recent_messages) == 20


async def test_correction_accepts_a_transcript_larger_than_any_other_route_does(client, app_under_test) -> None:
    meeting = {"clientId": "67a9b1c2d3e4f5a6b7c8d9e0", "projectId": None, "meetingId": "67b000000000000000000001",
               "segments": transcript(hours=32), "chunkSize": 20}
    assert len(json.dumps(meeting).encode()) > 4 * MIB  # about 150 KB per hour of speech

    response = await client.post("/correction/correct", json=meeting)

    assert response.status_code == 200, response.text
    assert len(response.json()["segments"]) == 32_000


# ------------------------------------------------------------------ the depth scan
@pytest.mark.parametrize(("body", "deeper"), [
    (json.dumps(nested(32)), False),
    (json.dumps(nested(33)), True),
    (json.dumps({"text": "[[[[[[[[[[" * 10, "quote": 'a \\" [[[[ "'}), False),  # brackets inside strings are text
    (json.dumps({"a": [1, 2, {"b": [3]}]}), False),
    ("[" * 40, True),  # invalid JSON is left to the parser, unless it is too deep anyway
    ("[[[[[", False),
    ('["]",' * 40 + "1" + "]" * 40, True),  # a closing bracket in a string closes nothing
    (json.dumps([["a\\", "]]]]"]] * 3), False),  # an escaped backslash before a closing quote
    ("[" * 40 + '"' + '\\"' * 1000 + "\\", True),  # crafted escapes, never closed
    ("[" * 20 + "[]," * 1000 + "]" * 20, False),  # many brackets, shallow
])
def test_json_depth_counts_structure_not_text(body: str, deeper: bool) -> None:
    assert json_depth_exceeds(body.encode(), 32) is deeper


def kotlin_bodies() -> Iterator[bytes]:
    yield json.dumps(orchestrate_body(environment=kotlin_environment(), chat_history=kotlin_chat_history(200))).encode()
    yield json.dumps({"clientId": "c", "segments": transcript(0.1), "retranscribedIndices": [0],
                      "userCorrectedIndices": {"3": "Kubernetes"}}).encode()


def test_kotlin_bodies_nest_well_inside_the_default_depth() -> None:
    for body in kotlin_bodies():
        assert not json_depth_exceeds(body, 8)


# ------------------------------------------------------------------ the real server
def test_the_service_process_answers_limits_over_a_real_socket(api: httpx.Client, kotlin) -> None:
    """uvicorn closes a connection whose body was not read: the rest of a refused body is read and
    dropped first, so a client still sending it reads the 413 instead of a reset."""
    too_large = api.post("/orchestrate/stream", content=b'{"query": "' + b"x" * (5 * MIB) + b'"}',
                         headers={"Content-Type": "application/json"})
    too_deep = api.post("/orchestrate/stream", json=orchestrate_body(environment={"x": nested(150)}))
    too_long = api.post("/approve/thread-t1-00000000", json={"approved": True, "modification": "x" * 1_000_001,
                                                             "reason": None})

    assert (too_large.status_code, too_deep.status_code, too_long.status_code) == (413, 422, 422)
    assert "MAX_BODY_BYTES" in too_large.json()["detail"] and "MAX_JSON_DEPTH" in too_deep.json()["detail"]
    assert api.get("/health/live").status_code == 200  # the same client, still served
    assert kotlin.progress == [] and kotlin.statuses == []
