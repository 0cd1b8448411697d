"""The client methods the correction agent uses, over real HTTP: KB ingest / purge on the write
URL, by-kind on the read URL (kb-contract.md §2.3–§2.5); the correction-progress push (§3.3)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.clients.knowledge_base import KnowledgeBaseClient, KnowledgeBaseError
from app.clients.kotlin import CORRECTION_PROGRESS_PATH
from app.schemas.correction import CorrectionProgressPush
from tests.fixtures.kb_server import FakeKbServer
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.outbox import push_rig


async def test_writes_go_to_the_write_url_reads_to_the_read_url(http: httpx.AsyncClient, kb: FakeKbServer) -> None:
    with FakeKbServer() as write_kb:
        client = KnowledgeBaseClient(http, kb.url, write_kb.url, timeout=2)
        result = await client.ingest(source_urn="transcript-correction::1", content="When ...", client_id="c1",
                                     project_id=None, kind="transcript_correction", metadata={"original": "a"})
        purge = await client.purge("transcript-correction::1")
        chunks = await client.chunks_by_kind("transcript_correction", client_id="c1", project_id=None,
                                             max_results=7)
        assert [(r.path, r.data) for r in write_kb.requests] == [
            ("/api/v1/ingest", {"clientId": "c1", "projectId": None, "sourceUrn": "transcript-correction::1",
                                "kind": "transcript_correction", "content": "When ...",
                                "metadata": {"original": "a"}}),
            ("/api/v1/purge", {"sourceUrn": "transcript-correction::1"}),
        ]
    assert result["status"] == "success" and result["chunks_count"] == 1
    assert purge["chunks_deleted"] == 1
    assert [(r.path, r.data) for r in kb.requests] == [
        ("/api/v1/chunks/by-kind", {"clientId": "c1", "projectId": None, "kind": "transcript_correction",
                                    "maxResults": 7})]
    assert chunks == []


async def test_by_kind_returns_chunks_with_their_metadata(kb_client: KnowledgeBaseClient, kb: FakeKbServer) -> None:
    kb.add_chunk("rule text", "transcript-correction::x", client_id="c1", kind="transcript_correction")
    [chunk] = await kb_client.chunks_by_kind("transcript_correction", client_id="c1", project_id=None)
    assert (chunk.content, chunk.source_urn, chunk.metadata["kind"]) == ("rule text", "transcript-correction::x",
                                                                         "transcript_correction")


async def test_kb_failures_are_knowledge_base_errors(kb_client: KnowledgeBaseClient, kb: FakeKbServer) -> None:
    kb.set_mode("down")
    for call in (kb_client.ingest(source_urn="u", content="c", client_id="c1", project_id=None),
                 kb_client.purge("u"),
                 kb_client.chunks_by_kind("k", client_id="c1", project_id=None)):
        with pytest.raises(KnowledgeBaseError, match="HTTP 500"):
            await call


async def test_correction_progress_push_passes_kotlin_validation(http: httpx.AsyncClient, kotlin: FakeKotlinServer,
                                                                 mongo_db: Any) -> None:
    async with push_rig(http, kotlin.url, mongo_db, retry_base_seconds=0.01) as rig:
        kotlin.fail_next(1)
        await rig.client.push_correction_progress(CorrectionProgressPush(
            meeting_id="m1", client_id="c1", percent=50, chunks_done=1, total_chunks=2, message="Korekce chunk 2/2"))
        await rig.delivery.deliver_due()
        rig.client.push_correction_progress_nowait(CorrectionProgressPush(
            meeting_id="m1", client_id="c1", percent=100, chunks_done=2, total_chunks=2, message=None,
            tokens_generated=42))
        await rig.flush(5)

    # The failed heartbeat is replaced by the later one of its meeting: only the latest is worth sending.
    assert [(e.route, e.outcome) for e in kotlin.events] == [(CORRECTION_PROGRESS_PATH, "injected"),
                                                             (CORRECTION_PROGRESS_PATH, "accepted")]
    assert kotlin.correction_progress == [{"meetingId": "m1", "clientId": "c1", "percent": 100.0, "chunksDone": 2,
                                           "totalChunks": 2, "message": None, "tokensGenerated": 42}]
    assert kotlin.accepted_keys(CORRECTION_PROGRESS_PATH)[0].startswith("correction:m1:")
    assert kotlin.violations == []
