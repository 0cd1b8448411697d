"""CorrectionService in process with its real collaborators: the litellm provider streaming from
the scripted LLM, the KB client on the fake KB and the Kotlin client on the fake Kotlin server.
Constructor parameters (progress interval, context cap) make the slow paths fast."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.clients.knowledge_base import KnowledgeBaseClient
from app.clients.kotlin import KotlinClient
from app.config import Settings
from app.correction.chunking import estimate_tokens
from app.correction.rules import rule_sentence
from app.correction.service import CorrectionService
from app.correction.store import RuleStore
from app.llm.provider import LitellmProvider
from app.schemas.correction import CorrectionInstructRequest, CorrectionRequest
from tests.fixtures.kb_server import FakeKbServer
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.llm_server import RecordedRequest, Reply, ScriptedLlmServer
from tests.fixtures.outbox import PushRig, push_rig
from tests.support import node_marker

CLIENT = "c1"


@pytest.fixture
async def pushes(http: httpx.AsyncClient, kotlin: FakeKotlinServer, mongo_db: Any) -> AsyncIterator[PushRig]:
    async with push_rig(http, kotlin.url, mongo_db) as rig:
        yield rig


@pytest.fixture
def kotlin_client(pushes: PushRig) -> KotlinClient:
    return pushes.client


def make_service(llm: ScriptedLlmServer, kb_client: KnowledgeBaseClient, kotlin_client: KotlinClient,
                 **kwargs: Any) -> CorrectionService:
    settings = Settings(ollama_url=llm.url, local_model="test-model", heartbeat_dead_seconds=2)
    return CorrectionService(llm=LitellmProvider(settings), store=RuleStore(kb_client), progress_sink=kotlin_client,
                             **kwargs)


def request(texts: list[str], meeting_id: str | None = "m1", project_id: str | None = None,
            chunk_size: int = 20) -> CorrectionRequest:
    return CorrectionRequest.model_validate({
        "clientId": CLIENT, "projectId": project_id, "meetingId": meeting_id, "chunkSize": chunk_size,
        "segments": [{"i": i, "startSec": float(i), "endSec": i + 1.0, "text": t, "speaker": None}
                     for i, t in enumerate(texts)]})


def echo(request: RecordedRequest) -> str:
    lines = re.search(r"## Segments to correct\n(.*?)(?:\n\n## |\Z)", request.last_user, re.DOTALL).group(1)
    segments = [json.loads(line) for line in lines.splitlines()]
    return json.dumps({"segments": [{"i": s["i"], "text": s["text"].upper()} for s in segments], "questions": []})


async def test_long_generation_pushes_progress_while_streaming(llm: ScriptedLlmServer, kb: FakeKbServer,
                                                               kb_client: KnowledgeBaseClient,
                                                               kotlin_client: KotlinClient, pushes: PushRig,
                                                               kotlin: FakeKotlinServer) -> None:
    # ~60 pieces 30 ms apart: about 1.8 s of streaming, pushed every 0.4 s.
    llm.script(Reply(match=node_marker("correction"), content=echo, chunk_size=2, chunk_delay=0.03))
    service = make_service(llm, kb_client, kotlin_client, progress_interval=0.4)

    result = await service.correct(request(["dobry den vsem pritomnym", "zaciname"]))
    await pushes.flush(5)

    assert [s.text for s in result.segments] == ["DOBRY DEN VSEM PRITOMNYM", "ZACINAME"]
    pushes = kotlin.correction_progress
    streaming = [p for p in pushes if "generuji" in (p["message"] or "")]
    assert pushes[0]["message"] == "Korekce chunk 1/1" and pushes[-1]["percent"] == 100.0
    assert len(streaming) >= 2
    assert [p["tokensGenerated"] for p in streaming] == sorted(p["tokensGenerated"] for p in streaming)
    assert all(0.0 < p["percent"] < 100.0 and p["chunksDone"] == 0 for p in streaming)
    assert kotlin.violations == []


async def test_chunks_are_split_further_to_fit_the_context_cap(llm: ScriptedLlmServer, kb: FakeKbServer,
                                                               kb_client: KnowledgeBaseClient,
                                                               kotlin_client: KotlinClient,
                                                               kotlin: FakeKotlinServer) -> None:
    llm.script(Reply(match=node_marker("correction"), content=echo, chunk_size=1000))  # few stream lines: CPU
    cap, budget = 4_000, 1_000  # the prompt may hold 3000 tokens ≈ 9000 characters
    service = make_service(llm, kb_client, kotlin_client, context_cap=cap, output_budget=budget)
    texts = [f"segment {n}" + " slovo" * 400 for n in range(6)]  # ~2.4k characters each

    result = await service.correct(request(texts, meeting_id=None, chunk_size=20))

    assert len(llm.requests) > 1
    for recorded in llm.requests:
        assert sum(estimate_tokens(m["content"]) for m in recorded.messages) <= cap - budget
    assert [s.text for s in result.segments] == [t.upper() for t in texts]


async def test_correction_uses_client_rules_and_its_projects_rules_only(llm: ScriptedLlmServer, kb: FakeKbServer,
                                                                        kb_client: KnowledgeBaseClient,
                                                                        kotlin_client: KotlinClient) -> None:
    kind = "transcript_correction"
    kb.add_chunk(rule_sentence("Jarda", "Jaroslav", "person_name"), "transcript-correction::a", CLIENT, None, kind)
    kb.add_chunk(rule_sentence("ej aj", "AI", "abbreviation"), "transcript-correction::b", CLIENT, "p1", kind)
    kb.add_chunk(rule_sentence("kubernetis", "K8s", "terminology"), "transcript-correction::c", CLIENT, "p2", kind)
    kb.add_chunk(rule_sentence("foo", "bar"), "transcript-correction::d", "other-client", None, kind)
    llm.script(Reply(match=node_marker("correction"), content=echo))
    service = make_service(llm, kb_client, kotlin_client)

    await service.correct(request(["text"], meeting_id=None, project_id="p1"))

    system = llm.requests[0].messages[0]["content"]
    assert '"Jarda" -> "Jaroslav"' in system and '"ej aj" -> "AI"' in system
    assert "kubernetis" not in system and '"foo"' not in system


ENGLISH = ["Hello everyone, today we deploy the new cluster", "and then we will talk about the agents"]
CZECH = ["Dobrý den všem, dneska nasadíme nový cluster", "a pak probereme agenty"]


@pytest.mark.parametrize(("configured", "transcript", "started", "finished"), [
    ("auto", ENGLISH, "Correction chunk 1/1", "Correction finished"),
    ("auto", CZECH, "Korekce chunk 1/1", "Korekce dokončena"),
    ("cs", ENGLISH, "Korekce chunk 1/1", "Korekce dokončena"),
], ids=["auto-english", "auto-czech", "configured-czech"])
async def test_progress_speaks_the_transcripts_language_unless_one_is_configured(
        llm: ScriptedLlmServer, kb_client: KnowledgeBaseClient, kotlin_client: KotlinClient, pushes: PushRig,
        kotlin: FakeKotlinServer, configured: str, transcript: list[str], started: str, finished: str) -> None:
    llm.script(Reply(match=node_marker("correction"), content=echo))
    service = make_service(llm, kb_client, kotlin_client, language=configured)

    await service.correct(request(transcript))
    await pushes.flush(5)

    assert [p["message"] for p in kotlin.correction_progress] == [started, finished]


def instruct_request(instruction: str, texts: list[str]) -> CorrectionInstructRequest:
    return CorrectionInstructRequest.model_validate({
        "clientId": CLIENT, "projectId": None, "instruction": instruction,
        "segments": [{"i": i, "startSec": float(i), "endSec": i + 1.0, "text": t, "speaker": None}
                     for i, t in enumerate(texts)]})


@pytest.mark.parametrize(("instruction", "summary", "empty"), [
    ("Write the name of the cluster in capitals", "Changed 2 of 2 segments, new rules: 0.", "No segments."),
    ("Název clusteru piš velkými písmeny", "Upraveno 2 z 2 segmentů, nových pravidel: 0.", "Žádné segmenty."),
], ids=["en", "cs"])
async def test_instruction_summary_speaks_the_instructions_language(
        llm: ScriptedLlmServer, kb_client: KnowledgeBaseClient, kotlin_client: KotlinClient, instruction: str,
        summary: str, empty: str) -> None:
    """Of a Czech transcript: the user's instruction tells the language the user reads."""
    def upper(recorded: RecordedRequest) -> str:
        lines = re.search(r"## Segments\n(.*?)(?:\n\n## |\Z)", recorded.last_user, re.DOTALL).group(1)
        return json.dumps({"segments": [{"i": s["i"], "text": s["text"].upper()}
                                        for s in map(json.loads, lines.splitlines())], "newRules": []})

    llm.script(Reply(match=node_marker("correction-instruct"), content=upper))
    service = make_service(llm, kb_client, kotlin_client)

    result = await service.instruct(instruct_request(instruction, CZECH))
    nothing = await service.instruct(instruct_request(instruction, []))

    assert (result.status, result.summary) == ("success", summary)
    assert (nothing.status, nothing.summary) == ("success", empty)
