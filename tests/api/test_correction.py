"""`/correction/*` (`docs/api.md`, transcript correction; kb-contract.md §5) against the real service,
the scripted LLM, the fake KB (which drops `metadata` on ingest like the real one) and the fake
Kotlin server (which validates the correction-progress push like Ktor)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.fixtures.kb_server import FakeKbServer
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.llm_server import RecordedRequest, Reply, ScriptedLlmServer
from tests.support import node_marker, wait_until

CLIENT_ID = "67a9b1c2d3e4f5a6b7c8d9e0"
PROJECT_ID = "67a9b1c2d3e4f5a6b7c8d9e1"
MEETING_ID = "67b000000000000000000001"
CORRECT = node_marker("correction")
TARGETED = node_marker("correction-targeted")
INSTRUCT = node_marker("correction-instruct")
URN = re.compile(r"^transcript-correction::[0-9a-f-]{36}$")


# ------------------------------------------------------------ Kotlin bodies
def submit_body(original: str = "kubernetis", corrected: str = "Kubernetes", category: str | None = "terminology",
                context: str | None = None, project_id: str | None = None) -> dict[str, Any]:
    return {"clientId": CLIENT_ID, "projectId": project_id, "original": original, "corrected": corrected,
            "category": category, "context": context}


def list_body(max_results: int | None = 100, project_id: str | None = None) -> dict[str, Any]:
    return {"clientId": CLIENT_ID, "projectId": project_id, "maxResults": max_results}


def segment(i: int, text: str, speaker: str | None = None) -> dict[str, Any]:
    return {"i": i, "startSec": round(i * 4.2, 1), "endSec": round(i * 4.2 + 4.2, 1), "text": text,
            "speaker": speaker}


TRANSCRIPT = [
    segment(0, "Dobrý den, tady Jan Damek", "SPEAKER_00"),
    segment(1, "dneska nasadíme kubernetis cluster", "SPEAKER_00"),
    segment(2, "a pak probereme ej aj agenty", "SPEAKER_01"),
]


def correct_body(segments: list[dict[str, Any]] | None = None, meeting_id: str | None = MEETING_ID,
                 chunk_size: int | None = 20, project_id: str | None = None) -> dict[str, Any]:
    return {"clientId": CLIENT_ID, "projectId": project_id, "meetingId": meeting_id,
            "segments": segments if segments is not None else TRANSCRIPT, "chunkSize": chunk_size}


# ------------------------------------------------------------- scripted model
def section(request: RecordedRequest, title: str) -> list[dict[str, Any]]:
    """The JSON segment lines of one `## <title>` section of the user prompt."""
    match = re.search(rf"## {re.escape(title)}[^\n]*\n(.*?)(?:\n\n## |\Z)", request.last_user, re.DOTALL)
    return [json.loads(line) for line in match.group(1).splitlines()] if match else []


FIXES = {"kubernetis": "Kubernetes", "ej aj": "AI", "Damek": "Dámek"}


def fix(text: str) -> str:
    for wrong, right in FIXES.items():
        text = text.replace(wrong, right)
    return text


def corrector(*, questions: Callable[[list[dict]], list[dict]] = lambda segs: [],
              drop: set[int] = frozenset(), invent: bool = False) -> Callable[[RecordedRequest], str]:
    """A model that fixes FIXES in every segment it is asked to correct."""

    def answer(request: RecordedRequest) -> str:
        segs = section(request, "Segments to correct")
        out = [{"i": s["i"], "text": fix(s["text"])} for s in segs if s["i"] not in drop]
        if invent:
            out.append({"i": 99, "text": "vymyšlený segment"})
        return json.dumps({"segments": out, "questions": questions(segs)}, ensure_ascii=False)

    return answer


def progress_of(kotlin: FakeKotlinServer, meeting_id: str = MEETING_ID) -> list[dict[str, Any]]:
    return [p for p in kotlin.correction_progress if p["meetingId"] == meeting_id]


def wait_final_progress(kotlin: FakeKotlinServer, meeting_id: str = MEETING_ID) -> list[dict[str, Any]]:
    return wait_until(lambda: (lambda p: p if p and p[-1]["percent"] == 100.0 else None)(progress_of(kotlin,
                                                                                                     meeting_id)),
                      what=f"final correction progress; recorded:\n{kotlin.describe()}")


# ------------------------------------------------------------------- rules
def test_submit_list_delete_round_trip_through_a_kb_that_drops_metadata(api: httpx.Client, kb: FakeKbServer) -> None:
    response = api.post("/correction/submit", json=submit_body(context="DevOps porada"))

    assert response.status_code == 200, response.text
    result = response.json()
    assert set(result) == {"correctionId", "sourceUrn", "status"} and result["status"] == "success"
    assert URN.match(result["sourceUrn"]) and result["sourceUrn"] == f"transcript-correction::{result['correctionId']}"
    [ingest] = [r for r in kb.requests if r.path == "/api/v1/ingest"]
    sentence = ('When "kubernetis" appears in a transcript, it should be corrected to "Kubernetes". '
                "Category: Terminology / Terminologie. Context: DevOps porada.")
    assert ingest.data["kind"] == "transcript_correction" and ingest.data["content"] == sentence
    assert ingest.data["sourceUrn"] == result["sourceUrn"] and ingest.data["clientId"] == CLIENT_ID
    assert ingest.data["metadata"] == {"original": "kubernetis", "corrected": "Kubernetes",
                                       "category": "terminology", "context": "DevOps porada",
                                       "correctionId": result["correctionId"]}
    assert "metadata" not in kb.chunks[0]  # the KB kept only the sentence

    listed = api.post("/correction/list", json=list_body(max_results=500))

    assert listed.status_code == 200, listed.text
    assert listed.json() == {"corrections": [{
        "content": sentence, "sourceUrn": result["sourceUrn"],
        "metadata": {"original": "kubernetis", "corrected": "Kubernetes", "category": "terminology",
                     "context": "DevOps porada", "correctionId": result["correctionId"]},
    }]}
    by_kind = [r for r in kb.requests if r.path == "/api/v1/chunks/by-kind"][-1]
    assert by_kind.data == {"clientId": CLIENT_ID, "projectId": None, "kind": "transcript_correction",
                            "maxResults": 500}

    deleted = api.post("/correction/delete", json={"sourceUrn": result["sourceUrn"]})

    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"status": "success", "chunks_deleted": 1, "nodes_cleaned": 0, "edges_cleaned": 0,
                              "nodes_deleted": 0, "edges_deleted": 0}
    assert [r.data for r in kb.requests if r.path == "/api/v1/purge"] == [{"sourceUrn": result["sourceUrn"]}]
    assert api.post("/correction/list", json=list_body()).json() == {"corrections": []}


def test_submit_accepts_the_contract_example_and_explicit_null_category(api: httpx.Client, kb: FakeKbServer) -> None:
    example = {"clientId": CLIENT_ID, "projectId": None, "original": "kubernetis", "corrected": "Kubernetes",
               "category": "terminology", "context": None}
    assert api.post("/correction/submit", json=example).status_code == 200
    assert api.post("/correction/submit", json=submit_body("Jarda", "Jaroslav", category=None)).status_code == 200

    corrections = api.post("/correction/list", json=list_body(max_results=None)).json()["corrections"]

    assert sorted((c["metadata"]["original"], c["metadata"]["category"], c["metadata"]["context"])
                  for c in corrections) == [("Jarda", "general", ""), ("kubernetis", "terminology", "")]
    assert all(isinstance(v, str) for c in corrections for v in c["metadata"].values())


def test_list_reads_rules_stored_by_the_original_orchestrator(api: httpx.Client, kb: FakeKbServer) -> None:
    kb.add_chunk('When "Jarda" appears in a transcript, it should be corrected to "Jaroslav". '
                 "Category: Person Names / Jmena osob.", "transcript-correction::0b5f2c1e-old", client_id=CLIENT_ID,
                 kind="transcript_correction")
    kb.add_chunk("unrelated rule of another client", "transcript-correction::other", client_id="someone-else",
                 kind="transcript_correction")

    corrections = api.post("/correction/list", json=list_body()).json()["corrections"]

    assert [c["metadata"] for c in corrections] == [{"original": "Jarda", "corrected": "Jaroslav",
                                                     "category": "person_name", "context": "",
                                                     "correctionId": "0b5f2c1e-old"}]


def test_answer_turns_each_answer_into_a_rule(api: httpx.Client, kb: FakeKbServer) -> None:
    body = {"clientId": CLIENT_ID, "projectId": PROJECT_ID, "answers": [
        {"original": "Damek", "corrected": "Dámek", "category": "person_name", "context": "Jan Dámek, CTO"},
        {"original": "ej aj", "corrected": "AI", "category": "abbreviation", "context": None},
    ]}

    response = api.post("/correction/answer", json=body)

    assert response.status_code == 200, response.text
    assert response.json() == {"status": "success", "rulesCreated": 2}
    ingests = [r.data for r in kb.requests if r.path == "/api/v1/ingest"]
    assert [i["projectId"] for i in ingests] == [PROJECT_ID, PROJECT_ID]
    listed = api.post("/correction/list", json=list_body(project_id=PROJECT_ID)).json()["corrections"]
    assert sorted((c["metadata"]["original"], c["metadata"]["corrected"], c["metadata"]["category"],
                   c["metadata"]["context"]) for c in listed) == [
        ("Damek", "Dámek", "person_name", "Jan Dámek, CTO"), ("ej aj", "AI", "abbreviation", "")]


def test_rules_go_to_the_write_url_and_are_listed_from_the_read_url(service_factory: Any, kb: FakeKbServer) -> None:
    with FakeKbServer() as write_kb:
        service = service_factory(knowledgebase_write_url=write_kb.url).start()
        with service.client() as http:
            submitted = http.post("/correction/submit", json=submit_body())
            assert submitted.status_code == 200, submitted.text
            http.post("/correction/list", json=list_body())
            http.post("/correction/delete", json={"sourceUrn": submitted.json()["sourceUrn"]})
        assert [r.path for r in write_kb.requests] == ["/api/v1/ingest", "/api/v1/purge"]
        assert [r.path for r in kb.requests if r.path.startswith("/api/")] == ["/api/v1/chunks/by-kind"]


# ------------------------------------------------------------- corrections
def test_correct_in_two_chunks_keeps_timing_and_speakers_applies_rules_and_reports_progress(
    api: httpx.Client, llm: ScriptedLlmServer, kotlin: FakeKotlinServer, kb: FakeKbServer
) -> None:
    assert api.post("/correction/submit", json=submit_body()).status_code == 200
    llm.script(Reply(match=CORRECT, content=corrector()))

    response = api.post("/correction/correct", json=correct_body(chunk_size=2))

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "success" and body["questions"] == []
    assert body["segments"] == [
        {**TRANSCRIPT[0], "text": "Dobrý den, tady Jan Dámek"},
        {**TRANSCRIPT[1], "text": "dneska nasadíme Kubernetes cluster"},
        {**TRANSCRIPT[2], "text": "a pak probereme AI agenty"},
    ]
    first, second = llm.requests
    assert [s["i"] for s in section(first, "Segments to correct")] == [0, 1]
    assert [s["i"] for s in section(second, "Segments to correct")] == [2]
    for request in (first, second):
        assert '"kubernetis" -> "Kubernetes"' in request.messages[0]["content"]  # the stored rule is in the prompt
    pushes = wait_final_progress(kotlin)
    assert pushes == [
        {"meetingId": MEETING_ID, "clientId": CLIENT_ID, "percent": 0.0, "chunksDone": 0, "totalChunks": 2,
         "message": "Korekce chunk 1/2", "tokensGenerated": 0},
        {"meetingId": MEETING_ID, "clientId": CLIENT_ID, "percent": 50.0, "chunksDone": 1, "totalChunks": 2,
         "message": "Korekce chunk 2/2", "tokensGenerated": pushes[1]["tokensGenerated"]},
        {"meetingId": MEETING_ID, "clientId": CLIENT_ID, "percent": 100.0, "chunksDone": 2, "totalChunks": 2,
         "message": "Korekce dokončena", "tokensGenerated": pushes[2]["tokensGenerated"]},
    ]
    assert 0 < pushes[1]["tokensGenerated"] < pushes[2]["tokensGenerated"]
    assert kotlin.violations == []


def test_contract_example_body_without_stored_rules(api: httpx.Client, llm: ScriptedLlmServer,
                                                    kotlin: FakeKotlinServer, kb: FakeKbServer) -> None:
    llm.script(Reply(match=CORRECT, content=corrector()))
    example = {"clientId": CLIENT_ID, "projectId": None, "meetingId": MEETING_ID,
               "segments": [{"i": 0, "startSec": 0.0, "endSec": 4.2, "text": "Dobrý den, tady Jan Damek",
                             "speaker": None}], "chunkSize": 20}

    response = api.post("/correction/correct", json=example)

    assert response.status_code == 200, response.text
    assert response.json() == {"segments": [{"i": 0, "startSec": 0.0, "endSec": 4.2,
                                              "text": "Dobrý den, tady Jan Dámek", "speaker": None}],
                               "questions": [], "status": "success"}
    assert "No correction rules" in llm.requests[0].messages[0]["content"]
    assert [(p["percent"], p["totalChunks"]) for p in wait_final_progress(kotlin)] == [(0.0, 1), (100.0, 1)]
    assert kotlin.violations == []


def test_nothing_is_pushed_without_a_meeting_id(api: httpx.Client, llm: ScriptedLlmServer,
                                                kotlin: FakeKotlinServer) -> None:
    llm.script(Reply(match=CORRECT, content=corrector()))

    response = api.post("/correction/correct", json=correct_body(meeting_id=None, chunk_size=1))
    assert response.status_code == 200 and len(llm.requests) == 3
    # Pushes leave through one ordered queue: once a later request's pushes arrived, any push of
    # the first request would have arrived before them.
    later = api.post("/correction/correct", json=correct_body(segments=TRANSCRIPT[:1], meeting_id="marker-meeting"))
    assert later.status_code == 200
    wait_final_progress(kotlin, "marker-meeting")

    assert [p["meetingId"] for p in kotlin.correction_progress] == ["marker-meeting", "marker-meeting"]


def test_questions_make_the_status_needs_input(api: httpx.Client, llm: ScriptedLlmServer) -> None:
    def ask(segs: list[dict]) -> list[dict]:
        return [{"i": s["i"], "original": "Damek", "question": "Jak se píše příjmení?", "options": ["Damek", "Dámek"]}
                for s in segs if "Damek" in s["text"]]

    llm.script(Reply(match=CORRECT, content=corrector(questions=ask)))

    response = api.post("/correction/correct", json=correct_body(meeting_id=None))

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "needs_input"
    [question] = body["questions"]
    assert set(question) == {"id", "i", "original", "question", "options", "context"}
    assert question["id"] and question["i"] == 0 and question["original"] == "Damek"
    assert question["question"] == "Jak se píše příjmení?" and question["options"] == ["Damek", "Dámek"]
    assert question["context"] == "Dobrý den, tady Jan Damek"


def test_segments_the_model_drops_or_invents_change_nothing(api: httpx.Client, llm: ScriptedLlmServer) -> None:
    llm.script(Reply(match=CORRECT, content=corrector(drop={1}, invent=True)))

    body = api.post("/correction/correct", json=correct_body(meeting_id=None)).json()

    assert [s["i"] for s in body["segments"]] == [0, 1, 2]
    assert [s["text"] for s in body["segments"]] == ["Dobrý den, tady Jan Dámek", TRANSCRIPT[1]["text"],
                                                     "a pak probereme AI agenty"]


def test_correct_targeted_sends_only_retranscribed_segments_and_applies_user_corrections(
    api: httpx.Client, llm: ScriptedLlmServer, kotlin: FakeKotlinServer
) -> None:
    segments = [*TRANSCRIPT, segment(3, "kubernetis je super", "SPEAKER_01"), segment(4, "díky, nashle")]
    llm.script(Reply(match=TARGETED, content=corrector()))
    body = {"clientId": CLIENT_ID, "projectId": PROJECT_ID, "meetingId": MEETING_ID, "segments": segments,
            "retranscribedIndices": [1, 3], "userCorrectedIndices": {"3": "Kubernetes je super"}}

    response = api.post("/correction/correct-targeted", json=body)

    assert response.status_code == 200, response.text
    result = response.json()
    assert result["status"] == "success"
    assert [s["text"] for s in result["segments"]] == [
        segments[0]["text"], "dneska nasadíme Kubernetes cluster", segments[2]["text"], "Kubernetes je super",
        segments[4]["text"]]
    assert [{k: v for k, v in s.items() if k != "text"} for s in result["segments"]] == [
        {k: v for k, v in s.items() if k != "text"} for s in segments]
    [request] = llm.requests
    assert [s["i"] for s in section(request, "Segments to correct")] == [1]
    assert [s["i"] for s in section(request, "Neighbouring segments")] == [0, 2]
    assert "kubernetis je super" not in request.text and "Kubernetes je super" not in request.text
    assert [(p["percent"], p["chunksDone"], p["totalChunks"]) for p in wait_final_progress(kotlin)] == [
        (0.0, 0, 1), (100.0, 1, 1)]
    assert kotlin.violations == []


def test_correct_targeted_with_only_user_corrections_needs_no_model(api: httpx.Client, llm: ScriptedLlmServer,
                                                                   kb: FakeKbServer) -> None:
    body = {"clientId": CLIENT_ID, "projectId": None, "meetingId": None, "segments": TRANSCRIPT,
            "retranscribedIndices": [2], "userCorrectedIndices": {"2": "a pak probereme AI agenty"}}

    response = api.post("/correction/correct-targeted", json=body)

    assert response.status_code == 200
    assert response.json()["segments"][2]["text"] == "a pak probereme AI agenty"
    assert llm.requests == [] and kb.requests == []


def test_instruct_applies_the_instruction_and_stores_new_rules(api: httpx.Client, llm: ScriptedLlmServer,
                                                               kb: FakeKbServer, kotlin: FakeKotlinServer) -> None:
    def answer(request: RecordedRequest) -> str:
        segs = section(request, "Segments")
        return json.dumps({"segments": [{"i": s["i"], "text": s["text"].replace("Damek", "Dámek")} for s in segs],
                           "newRules": [{"original": "Damek", "corrected": "Dámek", "category": "person_name"}],
                           "summary": "Opraveno příjmení Dámek."}, ensure_ascii=False)

    llm.script(Reply(match=INSTRUCT, content=answer))
    body = {"clientId": CLIENT_ID, "projectId": None, "segments": TRANSCRIPT,
            "instruction": "Jan Damek se píše s dlouhým á: Dámek"}

    response = api.post("/correction/instruct", json=body)

    assert response.status_code == 200, response.text
    result = response.json()
    assert result["status"] == "success" and result["summary"] == "Opraveno příjmení Dámek."
    assert result["segments"][0] == {**TRANSCRIPT[0], "text": "Dobrý den, tady Jan Dámek"}
    assert result["segments"][1:] == TRANSCRIPT[1:]
    [rule] = result["newRules"]
    assert rule["status"] == "success" and URN.match(rule["sourceUrn"])
    assert rule["sourceUrn"].endswith(rule["correctionId"])
    assert "Jan Damek se píše s dlouhým á: Dámek" in llm.requests[0].text
    listed = api.post("/correction/list", json=list_body()).json()["corrections"]
    assert [(c["metadata"]["original"], c["metadata"]["corrected"], c["metadata"]["category"]) for c in listed] == [
        ("Damek", "Dámek", "person_name")]
    assert kotlin.correction_progress == []  # instruct has no meetingId


def test_instruct_with_an_unusable_model_answer_fails_softly(api: httpx.Client, llm: ScriptedLlmServer,
                                                             kb: FakeKbServer) -> None:
    llm.script(Reply(match=INSTRUCT, content="nevím"))
    body = {"clientId": CLIENT_ID, "projectId": None, "segments": TRANSCRIPT, "instruction": "oprav jména"}

    response = api.post("/correction/instruct", json=body)

    assert response.status_code == 200, response.text
    result = response.json()
    assert result["status"] == "failed" and result["segments"] == TRANSCRIPT and result["newRules"] == []
    assert "invalid JSON" in result["summary"]
    assert not [r for r in kb.requests if r.path == "/api/v1/ingest"]


# ------------------------------------------------------------------ failures
def test_kb_down_correct_works_without_rules_but_rule_writes_are_502(api: httpx.Client, llm: ScriptedLlmServer,
                                                                     kb: FakeKbServer) -> None:
    kb.set_mode("down")
    llm.script(Reply(match=CORRECT, content=corrector()))

    corrected = api.post("/correction/correct", json=correct_body(meeting_id=None))

    assert corrected.status_code == 200, corrected.text
    assert corrected.json()["segments"][1]["text"] == "dneska nasadíme Kubernetes cluster"
    assert "No correction rules" in llm.requests[0].messages[0]["content"]
    for path, body in [
        ("/correction/submit", submit_body()),
        ("/correction/list", list_body()),
        ("/correction/delete", {"sourceUrn": "transcript-correction::0b5f2c1e"}),
        ("/correction/answer", {"clientId": CLIENT_ID, "projectId": None,
                                "answers": [{"original": "a", "corrected": "b", "category": "general",
                                             "context": None}]}),
    ]:
        response = api.post(path, json=body)
        assert response.status_code == 502, (path, response.text)
        assert "KB answered HTTP 500" in response.json()["detail"], path


def test_model_garbage_twice_is_a_502_with_a_clear_detail(api: httpx.Client, llm: ScriptedLlmServer) -> None:
    llm.script(Reply(match=CORRECT, content="Tady je opravený přepis, doufám, že pomůže."))

    response = api.post("/correction/correct", json=correct_body(meeting_id=None))

    assert response.status_code == 502
    detail = response.json()["detail"]
    assert "correction of every chunk (1) failed" in detail and "invalid JSON" in detail
    assert len(llm.requests) == 2


def test_an_unreadable_chunk_keeps_its_text_and_the_rest_is_corrected(api: httpx.Client,
                                                                     llm: ScriptedLlmServer) -> None:
    """One chunk's garbage (twice: the repair round too) must not fail the meeting's transcript:
    Kotlin would mark it FAILED on any error. Its segments come back as sent, listed as uncorrected."""
    fixed = corrector()

    def answer(request: RecordedRequest) -> str:
        repair = "not valid JSON" in request.last_user  # only the first chunk ever gets a repair round
        segs = section(request, "Segments to correct")
        return "Tady je opravený přepis." if repair or any(s["i"] == 0 for s in segs) else fixed(request)

    llm.script(Reply(match=CORRECT, content=answer))

    response = api.post("/correction/correct", json=correct_body(meeting_id=None, chunk_size=2))

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["segments"] == [TRANSCRIPT[0], TRANSCRIPT[1], {**TRANSCRIPT[2], "text": "a pak probereme AI agenty"}]
    assert body["status"] == "success" and body["uncorrected"] == [0, 1]
    assert len(llm.requests) == 3  # chunk 1 and its repair round, then chunk 2


@pytest.mark.parametrize(("path", "body", "fragment"), [
    ("/correction/submit", {k: v for k, v in submit_body().items() if k != "clientId"}, "clientId"),
    ("/correction/submit", submit_body(original="  "), "original"),
    ("/correction/submit", {**submit_body(), "clientId": ""}, "clientId"),
    ("/correction/correct", {k: v for k, v in correct_body().items() if k != "segments"}, "segments"),
    ("/correction/correct", correct_body(segments=[{"i": 0, "endSec": 1.0, "text": "x", "speaker": None}]),
     "segments.0.startSec"),
    ("/correction/correct", correct_body(segments=[{**segment(0, "x"), "text": None}]), "segments.0.text"),
    ("/correction/correct", correct_body(chunk_size=0), "chunkSize"),
    ("/correction/correct-targeted", {"clientId": CLIENT_ID, "projectId": None, "meetingId": None,
                                      "segments": TRANSCRIPT}, "retranscribedIndices"),
    ("/correction/correct-targeted", {"clientId": CLIENT_ID, "projectId": None, "meetingId": None,
                                      "segments": TRANSCRIPT, "retranscribedIndices": [0],
                                      "userCorrectedIndices": {"first": "x"}}, "userCorrectedIndices"),
    ("/correction/list", {"projectId": None, "maxResults": 100}, "clientId"),
    ("/correction/answer", {"clientId": CLIENT_ID, "projectId": None}, "answers"),
    ("/correction/instruct", {"clientId": CLIENT_ID, "projectId": None, "segments": TRANSCRIPT, "instruction": ""},
     "instruction"),
    ("/correction/delete", {}, "sourceUrn"),
    ("/correction/delete", {"sourceUrn": "git::p1::src/auth/TokenService.kt"}, "sourceUrn"),
])
def test_bad_bodies_are_readable_422s(api: httpx.Client, llm: ScriptedLlmServer, kb: FakeKbServer, path: str,
                                      body: dict[str, Any], fragment: str) -> None:
    response = api.post(path, json=body)

    assert response.status_code == 422, response.text
    assert fragment in response.json()["detail"]
    assert llm.requests == [] and kb.requests == []


def test_explicit_nulls_in_defaulted_fields_are_defaults(api: httpx.Client, llm: ScriptedLlmServer,
                                                         kb: FakeKbServer) -> None:
    llm.script(Reply(match=TARGETED, content=corrector()), Reply(match=CORRECT, content=corrector()))
    body = {"clientId": CLIENT_ID, "projectId": None, "meetingId": None, "segments": TRANSCRIPT,
            "retranscribedIndices": [1], "userCorrectedIndices": None, "unknownFutureField": {"x": 1}}
    assert api.post("/correction/correct-targeted", json=body).status_code == 200
    assert api.post("/correction/correct", json=correct_body(chunk_size=None, meeting_id=None)).status_code == 200
    assert api.post("/correction/list", json=list_body(max_results=None)).status_code == 200
    assert [r.data["maxResults"] for r in kb.requests if r.path == "/api/v1/chunks/by-kind"][-1] == 100


def test_correction_calls_get_a_local_context_that_holds_their_8k_answer(
    api: httpx.Client, llm: ScriptedLlmServer
) -> None:
    llm.script(Reply(match=CORRECT, content=corrector()))
    response = api.post("/correction/correct", json=correct_body([segment(0, "krátký segment")], meeting_id=None))
    assert response.status_code == 200, response.text
    [call] = [r for r in llm.requests if r.matched is not None]
    options = call.body.get("options", {})
    assert options.get("num_ctx") == 32768 and options.get("num_predict") == 8192  # prompt + 8192 > 8k
