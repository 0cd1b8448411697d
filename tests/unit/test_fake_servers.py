"""Self-tests of the fake servers in tests/fixtures.

The fakes stand in for Ollama/OpenAI, the Kotlin server and the KB in every
other test, so each test here pins one behaviour those tests rely on, over real
HTTP: the LLM fake through the real litellm client (the format must be exactly
what litellm parses), the Kotlin and KB fakes through httpx.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import litellm
import pytest

from tests.fixtures.kb_server import FakeKbServer
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.llm_server import RecordedRequest, Reply, ScriptedLlmServer

# Both litellm routes the service may use: (model, api_base suffix).
APIS = [("ollama_chat/test-model", ""), ("openai/test-model", "/v1")]
TEXT = "Plan: 1) read the file, 2) add the /health endpoint, 3) run the tests. Hotovo – žluťoučký kůň."


async def _complete(llm: ScriptedLlmServer, model: str, suffix: str, prompt: str, **kwargs: Any) -> Any:
    return await litellm.acompletion(
        model=model,
        api_base=llm.url + suffix,
        api_key="x",
        messages=[{"role": "system", "content": "You are Jervis."}, {"role": "user", "content": prompt}],
        **kwargs,
    )


# ------------------------------------------------------------------- LLM fake
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
@pytest.mark.parametrize(("model", "suffix"), APIS, ids=["ollama", "openai"])
async def test_litellm_gets_scripted_text_exactly(
    llm: ScriptedLlmServer, model: str, suffix: str, stream: bool
) -> None:
    """The reply text, usage and request record survive the real litellm parser on both APIs."""
    llm.script(Reply("add the endpoint", TEXT, chunk_size=5, name="plan"))
    response = await _complete(
        llm, model, suffix, "Please add the endpoint", stream=stream,
        **({"stream_options": {"include_usage": True}} if stream else {}),
    )
    if stream:
        deltas, usage = [], None
        async for chunk in response:
            if chunk.choices and chunk.choices[0].delta.content:
                deltas.append(chunk.choices[0].delta.content)
            usage = getattr(chunk, "usage", None) or usage
        assert "".join(deltas) == TEXT
        assert len(deltas) == -(-len(TEXT) // 5)  # really streamed in chunk_size pieces
    else:
        assert response.choices[0].message.content == TEXT
        usage = response.usage
    (request,) = llm.requests
    # The fake's own counts (len // 4), not litellm's local estimate: proves usage is parsed from the wire.
    assert (usage.prompt_tokens, usage.completion_tokens) == (len(request.text) // 4, len(TEXT) // 4)
    assert (request.model, request.stream, request.matched) == ("test-model", stream, "plan")
    assert request.path == ("/api/chat" if suffix == "" else "/v1/chat/completions")
    assert "You are Jervis." in request.text and request.last_user == "Please add the endpoint"


@pytest.mark.parametrize(("model", "suffix"), APIS, ids=["ollama", "openai"])
async def test_stalled_stream_times_out_without_blocking_server(
    llm: ScriptedLlmServer, model: str, suffix: str
) -> None:
    """A stall delivers the first pieces, then nothing; other requests are still served meanwhile.

    Also pins that the server notices the client going away: once the caller
    times out and closes the stream, the stalled handler ends (no leaked task).
    """
    llm.script(Reply("stall", "abcdefghijklmnop", chunk_size=4, stall_after_chunks=2, name="stall"))
    stream = await _complete(llm, model, suffix, "stall please", stream=True)
    received = ""
    while received != "abcdefgh":
        chunk = await asyncio.wait_for(stream.__anext__(), 2)
        received += chunk.choices[0].delta.content or ""

    started = time.monotonic()
    other = await _complete(llm, model, suffix, "something else")
    assert other.choices[0].message.content == "OK"
    assert time.monotonic() - started < 2
    llm.wait_for_in_flight(1)  # the stalled stream is still open (the other request has left)

    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(stream.__anext__(), 0.5)
    await stream.aclose()
    llm.wait_for_in_flight(0)  # the stalled handler ended once the client went away
    assert [r.matched for r in llm.requests] == ["stall", None]


def test_stop_is_prompt_with_a_stalled_stream_open() -> None:
    """Session teardown must not hang on a stream that stalls for an hour."""
    server = ScriptedLlmServer().start()
    server.script(Reply(None, "0123456789", chunk_size=2, stall_after_chunks=1))
    with httpx.Client(timeout=5) as client, client.stream(
        "POST", server.url + "/api/chat", json={"model": "m", "messages": [{"role": "user", "content": "x"}]}
    ) as response:
        lines = response.iter_lines()  # keep a reference: dropping it would close the connection
        assert json.loads(next(lines))["message"]["content"] == "01"
        assert server.in_flight == 1
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 3


@pytest.mark.parametrize(("model", "suffix"), APIS, ids=["ollama", "openai"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
async def test_error_status_makes_litellm_raise(llm: ScriptedLlmServer, model: str, suffix: str, stream: bool) -> None:
    """A scripted 500 reaches the caller as litellm's InternalServerError (status 500)."""
    llm.script(Reply(None, status=500, error_body='{"error":"model crashed"}', name="boom"))

    async def call() -> None:
        """A stream's error may come with its first chunk rather than with the call."""
        response = await _complete(llm, model, suffix, "hi", stream=stream, max_retries=0)
        async for _ in response:
            pass

    with pytest.raises(litellm.InternalServerError) as raised:
        await call()
    assert raised.value.status_code == 500
    assert "model crashed" in str(raised.value)
    assert [r.matched for r in llm.requests] == ["boom"]  # max_retries=0 also stops the OpenAI SDK retrying


def _ollama_chat(llm: ScriptedLlmServer, prompt: str) -> str:
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}], "stream": False}
    return httpx.post(llm.url + "/api/chat", json=body).json()["message"]["content"]


def test_rules_are_tried_in_order_and_times_is_honoured(llm: ScriptedLlmServer) -> None:
    """First live matching rule wins; an exhausted rule is skipped; no match falls back to "OK"."""

    def echo(request: RecordedRequest) -> str:
        return f"echo:{request.last_user}"

    llm.script(
        Reply("alpha", "first", times=1, name="once"),
        Reply("alpha", "second", name="always"),
        Reply("beta", echo, name="echo"),
    )
    llm.add(Reply("gamma", "never used", times=0))
    replies = [_ollama_chat(llm, p) for p in ("alpha", "alpha", "beta 7", "gamma", "Alpha")]
    assert replies == ["first", "second", "echo:beta 7", "OK", "OK"]  # matching is case-sensitive
    assert [r.matched for r in llm.wait_for_requests(5)] == ["once", "always", "echo", None, None]
    llm.reset()
    assert llm.requests == [] and _ollama_chat(llm, "alpha") == "OK"


def test_delays_are_applied(llm: ScriptedLlmServer) -> None:
    """delay_before and chunk_delay slow the reply down by (at least) the scripted time."""
    llm.script(Reply(None, "abcdef", chunk_size=2, delay_before=0.2, chunk_delay=0.1))
    started = time.monotonic()
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    lines = httpx.post(llm.url + "/api/chat", json=body).text.splitlines()
    assert time.monotonic() - started >= 0.4
    assert [json.loads(line)["message"]["content"] for line in lines] == ["ab", "cd", "ef", ""]


def test_a_held_reply_answers_only_once_released(llm: ScriptedLlmServer) -> None:
    """`hold` keeps the request open until the test sets the event (a run held inside a call)."""
    release = threading.Event()
    llm.script(Reply(None, "held", hold=release))
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": False}
    with ThreadPoolExecutor(1) as pool:
        reply = pool.submit(httpx.post, llm.url + "/api/chat", json=body, timeout=10)
        llm.wait_for_requests(1)
        time.sleep(0.2)
        assert not reply.done()
        release.set()
        assert reply.result().json()["message"]["content"] == "held"


def test_a_rule_with_a_path_answers_only_requests_to_that_endpoint(llm: ScriptedLlmServer) -> None:
    """`path` tells a cloud tier's call (Anthropic's /v1/messages) from the local model's with the
    same prompt; the other endpoints fall through to the next rule."""
    llm.script(Reply("hello", "cloud", path="/v1/messages", name="cloud"), Reply("hello", "local", name="local"))
    assert _ollama_chat(llm, "hello") == "local"
    cloud = httpx.post(llm.url + "/v1/messages", json={
        "model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hello"}]}).json()
    assert cloud["content"] == [{"type": "text", "text": "cloud"}]
    assert [(r.path, r.matched) for r in llm.requests] == [("/api/chat", "local"), ("/v1/messages", "cloud")]


def test_generate_and_discovery_endpoints(llm: ScriptedLlmServer) -> None:
    """The cheap Ollama/OpenAI side endpoints answer in their native shapes."""
    llm.script(Reply("sky", "blue", chunk_size=2))
    lines = httpx.post(llm.url + "/api/generate", json={"model": "m", "prompt": "sky?", "system": "s"}).text
    parsed = [json.loads(line) for line in lines.splitlines()]
    assert "".join(p["response"] for p in parsed) == "blue" and parsed[-1]["done"] is True
    assert llm.requests[0].messages == [{"role": "system", "content": "s"}, {"role": "user", "content": "sky?"}]
    assert httpx.get(llm.url + "/api/tags").json()["models"][0]["name"] == "test-model"
    assert httpx.get(llm.url + "/api/version").json() == {"version": "0.0.0-fake"}
    assert httpx.get(llm.url + "/v1/models").json()["data"][0]["id"] == "test-model"


def test_single_slot_mode_answers_nothing_else_while_a_generation_holds_the_slot(llm: ScriptedLlmServer) -> None:
    """Like llama-cpp-python's server: a held generation keeps every other request (the model
    listing too) connected and unanswered; Ollama's metadata endpoints still answer."""
    release = threading.Event()
    try:
        llm.occupy(release)
        with pytest.raises(httpx.ReadTimeout):
            httpx.get(llm.url + "/v1/models", timeout=0.3)
        assert httpx.get(llm.url + "/api/tags", timeout=5).status_code == 200
        with ThreadPoolExecutor(1) as pool:
            listing = pool.submit(httpx.get, llm.url + "/v1/models", timeout=10)
            llm.wait_for_slot_waiters(2)  # the timed-out listing still waits too, as on the real server
            assert not listing.done()
            release.set()
            assert listing.result().json()["data"][0]["id"] == "test-model"
        assert [r.matched for r in llm.requests] == ["occupant"]
    finally:
        release.set()


# ---------------------------------------------------------------- Kotlin fake
PROGRESS_EXAMPLE = {
    "taskId": "67ad0f1e2b3c4d5e6f708192", "clientId": "67a9b1c2d3e4f5a6b7c8d9e0", "node": "plan",
    "message": "Planning task execution...", "percent": 0.0, "goalIndex": 0, "totalGoals": 0, "stepIndex": 0,
    "totalSteps": 0,
}
STATUS_EXAMPLES = [
    {"taskId": "67ad…92", "threadId": "thread-67ad…92-1a2b3c4d", "status": "done",
     "summary": "Hotovo: přidán endpoint /health …", "error": None, "interruptAction": None,
     "interruptDescription": None, "branch": "task/67ad…92", "artifacts": ["app/api.py"]},
    {"taskId": "67ad…92", "threadId": "thread-67ad…92-1a2b3c4d", "status": "interrupted",
     "summary": None, "error": None, "interruptAction": "commit",
     "interruptDescription": "Commit changes to branch 'task/67ad…92'", "branch": None, "artifacts": []},
    {"taskId": "67ad…92", "threadId": "thread-67ad…92-1a2b3c4d", "status": "error", "summary": None,
     "error": "LLM timeout", "interruptAction": None, "interruptDescription": None, "branch": None, "artifacts": []},
]
CORRECTION_EXAMPLE = {
    "meetingId": "67b0…01", "clientId": "67a9…e0", "percent": 50.0, "chunksDone": 1, "totalChunks": 2,
    "message": "Korekce chunk 2/2", "tokensGenerated": 0,
}


def test_kotlin_accepts_the_contract_examples(kotlin: FakeKotlinServer) -> None:
    """Push examples shaped as `docs/api.md` documents them decode, answer 200 and are recorded in order."""
    pushes = [("/internal/orchestrator-progress", PROGRESS_EXAMPLE)]
    pushes += [("/internal/orchestrator-status", body) for body in STATUS_EXAMPLES]
    pushes += [("/internal/correction-progress", CORRECTION_EXAMPLE)]
    for route, body in pushes:
        response = httpx.post(kotlin.url + route, json=body)
        assert (response.status_code, response.json()) == (200, {"ok": True}), kotlin.describe()
    assert kotlin.violations == [] and kotlin.semantic_violations == []
    assert kotlin.progress == [PROGRESS_EXAMPLE]
    assert kotlin.statuses == STATUS_EXAMPLES
    assert kotlin.correction_progress == [CORRECTION_EXAMPLE]
    stamps = [e.received_at_mono for e in kotlin.events]
    assert len(stamps) == 5 and stamps == sorted(stamps)
    assert kotlin.wait_for_status(status="interrupted", timeout=1)["interruptAction"] == "commit"
    assert kotlin.wait_for_progress(node="plan", timeout=1)["taskId"] == PROGRESS_EXAMPLE["taskId"]


def _snake_case(body: dict[str, Any]) -> dict[str, Any]:
    return {"task_id": body["taskId"], "client_id": body["clientId"], "node": body["node"], "message": body["message"]}


@pytest.mark.parametrize(
    ("route", "body", "expected"),
    [
        ("orchestrator-progress", {**PROGRESS_EXAMPLE, "goalIndex": 1.0}, "'goalIndex': expected a JSON integer"),
        ("orchestrator-progress", {**PROGRESS_EXAMPLE, "totalSteps": "3"}, "'totalSteps': expected a JSON integer"),
        ("orchestrator-status", {**STATUS_EXAMPLES[0], "artifacts": None}, "'artifacts' is null"),
        ("orchestrator-status", {**STATUS_EXAMPLES[0], "clientId": None}, "'clientId' is null"),
        ("orchestrator-progress", {k: v for k, v in PROGRESS_EXAMPLE.items() if k != "clientId"},
         "missing required field 'clientId'"),
        ("orchestrator-progress", _snake_case(PROGRESS_EXAMPLE), "got snake_case 'task_id'"),
        ("orchestrator-progress", {**PROGRESS_EXAMPLE, "node": 3}, "'node': expected a JSON string"),
        ("correction-progress", {**CORRECTION_EXAMPLE, "chunksDone": None}, "'chunksDone' is null"),
    ],
    ids=["float-int", "string-int", "null-artifacts", "null-clientId", "no-clientId", "snake_case", "number-string",
         "null-chunksDone"],
)
def test_kotlin_rejects_contract_violations(kotlin: FakeKotlinServer, route: str, body: dict, expected: str) -> None:
    """A body kotlinx would not decode gets 500 {"ok":false}, a recorded violation, and is not 'accepted'."""
    response = httpx.post(f"{kotlin.url}/internal/{route}", json=body)
    assert (response.status_code, response.json()) == (500, {"ok": False})
    assert any(expected in v and route in v for v in kotlin.violations), kotlin.violations
    assert kotlin.progress == kotlin.statuses == kotlin.correction_progress == []


@pytest.mark.parametrize("headers", [{}, {"content-type": "text/plain"}], ids=["none", "text-plain"])
def test_kotlin_requires_json_content_type(kotlin: FakeKotlinServer, headers: dict[str, str]) -> None:
    """Ktor's receive() fails without Content-Type: application/json, even for a valid body."""
    response = httpx.post(kotlin.url + "/internal/orchestrator-progress", content=json.dumps(PROGRESS_EXAMPLE),
                          headers=headers)
    assert response.status_code == 500
    assert kotlin.progress == [] and "Content-Type" in kotlin.violations[0]


def test_kotlin_unknown_status_is_accepted_but_flagged(kotlin: FakeKotlinServer) -> None:
    """Kotlin decodes status "cancelled" but ignores it, which is a semantic bug worth flagging."""
    body = {**STATUS_EXAMPLES[2], "status": "cancelled"}
    response = httpx.post(kotlin.url + "/internal/orchestrator-status", json=body)
    assert response.status_code == 200 and kotlin.violations == []
    assert "cancelled" in kotlin.semantic_violations[0]


def test_kotlin_fail_next_and_wait_for(kotlin: FakeKotlinServer) -> None:
    """Injected failures answer the given status, are kept apart from accepted pushes and violations."""
    kotlin.fail_next(2, status=503)
    codes = [httpx.post(kotlin.url + "/internal/orchestrator-status", json=STATUS_EXAMPLES[0]).status_code
             for _ in range(3)]
    assert codes == [503, 503, 200]
    assert len(kotlin.failures) == 2 and kotlin.violations == []
    assert kotlin.wait_for_status(thread_id="thread-67ad…92-1a2b3c4d", timeout=1)["status"] == "done"
    with pytest.raises(AssertionError, match=r"(?s)status.*error.*injected"):
        kotlin.wait_for_status(status="error", timeout=0.2)


def test_kotlin_tracker_placeholders(kotlin: FakeKotlinServer) -> None:
    """Tracker calls answer like the Kotlin placeholders: no issue key, nothing created."""
    created = httpx.post(kotlin.url + "/internal/tracker/create-issue", json={"clientId": "c", "title": "T"}).json()
    assert created == {"ok": True, "message": "create-issue placeholder"}
    updated = httpx.post(kotlin.url + "/internal/tracker/update-issue", json={"clientId": "c", "issueKey": "FAKE-1"})
    assert updated.json() == {"ok": True, "message": "update-issue placeholder"}
    assert [name for name, _ in kotlin.tracker_calls] == ["create-issue", "update-issue"]
    assert kotlin.created_issues == []


def test_kotlin_implemented_tracker_creates_one_issue_per_idempotency_key(kotlin: FakeKotlinServer) -> None:
    kotlin.implemented_tracker()
    url = kotlin.url + "/internal/tracker/create-issue"
    keyed = [httpx.post(url, json={"clientId": "c", "title": "T"}, headers={"Idempotency-Key": "k1"}).json()
             for _ in range(2)]
    unkeyed = httpx.post(url, json={"clientId": "c", "title": "T"}).json()
    updated = httpx.post(kotlin.url + "/internal/tracker/update-issue", json={"clientId": "c", "issueKey": "FAKE-1"})
    assert keyed == [{"ok": True, "key": "FAKE-1"}] * 2 and unkeyed == {"ok": True, "key": "FAKE-2"}
    assert updated.json() == {"ok": True, "key": "FAKE-1"} and kotlin.created_issues == ["FAKE-1", "FAKE-2"]
    assert [e.idempotency_key for e in kotlin.events] == ["k1", "k1", None, None]


# -------------------------------------------------------------------- KB fake
def test_kb_retrieve_filters_by_tenant_and_ignores_snake_case(kb: FakeKbServer) -> None:
    """camelCase retrieve finds keyword matches of the project only; snake_case keys are ignored."""
    kb.add_chunk("TokenService refreshes the JWT token", "git::p1::TokenService.kt", "c1", "p1")
    kb.add_chunk("Token refresh in another project", "git::p2::Other.kt", "c1", "p2")
    kb.add_chunk("Client-wide token conventions", "conventions", "c1")
    kb.add_chunk("Unrelated text about cats", "git::p1::Cats.kt", "c1", "p1")
    body = {"query": "how is the token refreshed", "clientId": "c1", "projectId": "p1", "maxResults": 5,
            "minConfidence": 0.7, "expandGraph": True}
    items = httpx.post(kb.url + "/api/v1/retrieve", json=body).json()["items"]
    assert [i["sourceUrn"] for i in items] == ["git::p1::TokenService.kt"]
    assert items[0]["score"] == 1.0 and items[0]["metadata"]["source"] == "rag"

    client_wide = {"query": "token", "clientId": "c1", "projectId": "", "max_results": 1}
    simple = httpx.post(kb.url + "/api/v1/retrieve/simple", json=client_wide).json()["items"]
    assert len(simple) == 3  # projectId "" = every project of the client; max_results is not a field
    assert kb.requests[-1] == ("POST", "/api/v1/retrieve/simple", client_wide)


def test_kb_validation_errors_are_422(kb: FakeKbServer) -> None:
    """Like the real FastAPI KB: null clientId and a missing graph query are 422 with a detail list."""
    response = httpx.post(kb.url + "/api/v1/retrieve", json={"query": "x", "clientId": None})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "clientId"]
    response = httpx.get(kb.url + "/api/v1/graph/search", params={"clientId": "c1"})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["query", "query"]
    assert httpx.post(kb.url + "/api/v1/chunks/by-kind", json={"clientId": "c1"}).status_code == 422
    assert [r.path for r in kb.requests] == ["/api/v1/retrieve", "/api/v1/graph/search", "/api/v1/chunks/by-kind"]


def test_kb_graph_search(kb: FakeKbServer) -> None:
    """Bare array of {id,key,label,properties}; nodeType, tenant and limit filters apply."""
    kb.add_node("jervis", "repository", {"defaultBranch": "main"}, "c1", "p1")
    kb.add_node("main", "branch", {"branchName": "main", "isDefault": True}, "c1", "p1")
    kb.add_node("feature", "branch", {"branchName": "feature"}, "c2", "p9")
    params = {"query": "", "nodeType": "branch", "clientId": "c1", "projectId": "p1", "limit": 20}
    nodes = httpx.get(kb.url + "/api/v1/graph/search", params=params).json()
    assert [(n["label"], n["properties"]["isDefault"]) for n in nodes] == [("main", True)]
    assert set(nodes[0]) == {"id", "key", "label", "properties"} and nodes[0]["id"].startswith("KnowledgeNodes/")


def test_kb_modes(kb: FakeKbServer) -> None:
    """down → 500 {"detail":"KB down"} on /api routes; slow → the answer waits; health stays up."""
    kb.set_mode("down")
    response = httpx.post(kb.url + "/api/v1/retrieve", json={"query": "x"})
    assert (response.status_code, response.json()) == (500, {"detail": "KB down"})
    assert httpx.get(kb.url + "/health").json() == {"status": "ok", "mode": "all"}
    kb.set_mode("slow", delay=0.3)
    started = time.monotonic()
    assert httpx.post(kb.url + "/api/v1/retrieve", json={"query": "x"}).json() == {"items": []}
    assert time.monotonic() - started >= 0.3


def test_kb_ingest_drops_metadata_and_purge_deletes(kb: FakeKbServer) -> None:
    """The correction rule's original/corrected metadata is lost on ingest, as in the real KB."""
    ingest = {"clientId": "c1", "projectId": "", "sourceUrn": "transcript-correction::1",
              "kind": "transcript_correction",
              "content": 'When "Jarda" appears, correct it to "Jaroslav".',
              "metadata": {"original": "Jarda", "corrected": "Jaroslav", "category": "Person Names"}}
    result = httpx.post(kb.url + "/api/v1/ingest", json=ingest).json()
    assert result["status"] == "success" and result["chunks_count"] == 1
    listing = {"clientId": "c1", "projectId": "", "kind": "transcript_correction", "maxResults": 100}
    chunks = httpx.post(kb.url + "/api/v1/chunks/by-kind", json=listing).json()["chunks"]
    assert len(chunks) == 1 and chunks[0]["content"] == ingest["content"]
    assert set(chunks[0]["metadata"]) == {"content", "sourceUrn", "clientId", "projectId", "kind"}
    purged = httpx.post(kb.url + "/api/v1/purge", json={"sourceUrn": "transcript-correction::1"}).json()
    assert purged["chunks_deleted"] == 1 and kb.chunks == []


# ------------------------------------------------------------ Anthropic (LLM fake)
WRITE_CALL = {"name": "Write", "input": {"file_path": "/w/hello.txt", "content": "hi\n"}}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
async def test_anthropic_messages_through_litellm(llm: ScriptedLlmServer, stream: bool) -> None:
    """`anthropic/<m>` with api_base=llm.url (what Claude Code's ANTHROPIC_BASE_URL points at)."""
    llm.script(Reply("add the endpoint", TEXT, chunk_size=5, name="plan"))
    response = await _complete(llm, "anthropic/test-model", "", "Please add the endpoint", stream=stream,
                               max_tokens=100)
    if stream:
        deltas = [c.choices[0].delta.content async for c in response if c.choices and c.choices[0].delta.content]
        assert "".join(deltas) == TEXT and len(deltas) == -(-len(TEXT) // 5)
    else:
        assert response.choices[0].message.content == TEXT
        assert response.choices[0].finish_reason == "stop"
        assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (
            len(llm.requests[0].text) // 4, len(TEXT) // 4)
    (request,) = llm.requests
    assert (request.path, request.model, request.stream) == ("/v1/messages", "test-model", stream)
    assert request.matched == "plan"
    assert request.messages[0] == {"role": "system", "content": "You are Jervis."}  # `system` recorded first
    assert request.last_user == "Please add the endpoint"


def _sse_events(body: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_anthropic_tool_use_streamed(llm: ScriptedLlmServer) -> None:
    """A tool_use rule: text block, then a tool_use block whose input arrives as input_json_delta pieces."""
    llm.script(Reply("create", "Writing it.", tool_use=WRITE_CALL, chunk_size=7))
    body = {"model": "m", "max_tokens": 10, "stream": True, "system": [{"type": "text", "text": "sys"}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "create hello.txt"}]}]}
    events = _sse_events(httpx.post(llm.url + "/v1/messages", json=body).text)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    starts = [data["content_block"] for name, data in events if name == "content_block_start"]
    assert [block["type"] for block in starts] == ["text", "tool_use"]
    assert starts[1]["name"] == "Write" and starts[1]["id"].startswith("toolu_") and starts[1]["input"] == {}
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta" and d["index"] == 0)
    pieces = [d["delta"]["partial_json"] for n, d in events if n == "content_block_delta" and d["index"] == 1]
    assert text == "Writing it." and len(pieces) > 1 and json.loads("".join(pieces)) == WRITE_CALL["input"]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert llm.requests[0].messages[0] == {"role": "system", "content": "sys"}


def test_anthropic_tool_result_turn_matches_and_plain_reply(llm: ScriptedLlmServer) -> None:
    """The follow-up turn carries a tool_result: its text is matchable; a callable tool_use may
    return None for text only; the non-streaming reply has the same blocks."""
    llm.script(
        Reply("File created", "Done.", name="final"),
        Reply("create", "", tool_use=lambda request: WRITE_CALL | {"id": "toolu_1"}, times=1, name="call"),
    )
    first = httpx.post(llm.url + "/v1/messages", json={
        "model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "create hello.txt"}]}).json()
    assert first["content"] == [{"type": "tool_use", "id": "toolu_1", **WRITE_CALL}]
    assert first["stop_reason"] == "tool_use" and first["usage"]["output_tokens"] > 0
    follow_up = [
        {"role": "user", "content": "create hello.txt"},
        {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "File created successfully at: /w/hello.txt"}]},
    ]
    second = httpx.post(llm.url + "/v1/messages", json={"model": "m", "max_tokens": 10, "messages": follow_up}).json()
    assert second["content"] == [{"type": "text", "text": "Done."}] and second["stop_reason"] == "end_turn"
    assert [r.matched for r in llm.requests] == ["call", "final"]
    assert llm.requests[1].last_user == "File created successfully at: /w/hello.txt"


def test_anthropic_errors_count_tokens_and_tool_use_elsewhere(llm: ScriptedLlmServer) -> None:
    llm.script(Reply("boom", status=529), Reply("tool", tool_use=WRITE_CALL))
    boom = {"model": "m", "messages": [{"role": "user", "content": "boom"}]}
    failed = httpx.post(llm.url + "/v1/messages", json=boom)
    assert failed.status_code == 529 and failed.json()["type"] == "error"
    counted = httpx.post(llm.url + "/v1/messages/count_tokens",
                         json={"model": "m", "messages": [{"role": "user", "content": "x" * 40}]})
    assert counted.json() == {"input_tokens": 10}
    # tool_use rules are not answered on Ollama's endpoint: it fails loudly instead of dropping the call
    ollama = httpx.post(llm.url + "/api/chat", json={"model": "m", "messages": [
        {"role": "user", "content": "tool"}]})
    assert ollama.status_code == 500 and "only on /v1/messages" in ollama.text
    assert [r.path for r in llm.requests] == ["/v1/messages", "/api/chat"]  # count_tokens not recorded


# ------------------------------------------------------------- OpenAI tool calls (LLM fake)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
async def test_openai_tool_call_through_litellm(llm: ScriptedLlmServer, stream: bool) -> None:
    """A tool_use rule on the OpenAI endpoint is a native tool call litellm parses: name, id,
    arguments (streamed as pieces), finish reason "tool_calls"; the text before it survives."""
    llm.script(Reply("create", "Writing it.", tool_use=WRITE_CALL | {"id": "call_1"}, chunk_size=6, name="call"))
    response = await _complete(llm, "openai/test-model", "/v1", "create hello.txt", stream=stream)
    if stream:
        chunks = [chunk async for chunk in response]
        rebuilt = litellm.stream_chunk_builder(chunks)
        assert rebuilt is not None
        message, finish = rebuilt.choices[0].message, rebuilt.choices[0].finish_reason
        pieces = [c for c in chunks if c.choices and c.choices[0].delta.tool_calls]
        assert len(pieces) > 2  # the opening piece, then the arguments in pieces
    else:
        message, finish = response.choices[0].message, response.choices[0].finish_reason
        assert response.usage.completion_tokens > len("Writing it.") // 4
    assert finish == "tool_calls" and message.content == "Writing it."
    (call,) = message.tool_calls
    assert (call.id, call.type, call.function.name) == ("call_1", "function", "Write")
    assert json.loads(call.function.arguments) == WRITE_CALL["input"]
    assert llm.requests[0].matched == "call"


def test_openai_tool_result_turn_matches(llm: ScriptedLlmServer) -> None:
    """The turn carrying a `role: tool` result is matchable by its text; a rule without text gives
    content None beside the call; the raw streamed shape is what OpenAI sends."""
    llm.script(
        Reply("File created", "Done.", name="final"),
        Reply("create", "", tool_use=WRITE_CALL, times=1, chunk_size=1000, name="call"),
    )
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "create hello.txt"}]}
    events = [json.loads(line[6:]) for line in httpx.post(llm.url + "/v1/chat/completions", json=body).text.split(
        "\n\n") if line.startswith("data: {")]
    deltas = [event["choices"][0]["delta"] for event in events]
    opening, arguments = deltas[1]["tool_calls"][0], deltas[2]["tool_calls"][0]
    assert opening["index"] == 0 and opening["id"].startswith("call_fake_") and opening["type"] == "function"
    assert opening["function"] == {"name": "Write", "arguments": ""}
    assert arguments == {"index": 0, "function": {"arguments": json.dumps(WRITE_CALL["input"])}}
    assert events[-1]["choices"][0]["finish_reason"] == "tool_calls"
    follow_up = [
        {"role": "user", "content": "create hello.txt"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": opening["id"], "type": "function", "function": {"name": "Write", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": opening["id"], "content": [
            {"type": "text", "text": "File created successfully at: /w/hello.txt"}]},
    ]
    second = httpx.post(llm.url + "/v1/chat/completions", json={"model": "m", "messages": follow_up}).json()
    assert second["choices"][0]["message"]["content"] == "Done." and "tool_calls" not in second["choices"][0]["message"]
    assert second["choices"][0]["finish_reason"] == "stop"
    assert [r.matched for r in llm.requests] == ["call", "final"]
    assert "File created successfully" in llm.requests[1].text
    first = httpx.post(llm.url + "/v1/chat/completions", json={"model": "m", "messages": [
        {"role": "user", "content": "create it"}]}).json()
    assert first["choices"][0]["message"]["content"] == "OK"  # the call rule fired its one time
