"""Correction progress pushes: per chunk, throttled while streaming, a final 100 %; none without a meeting."""

from __future__ import annotations

import pytest

from app.correction.progress import CorrectionProgress
from app.schemas.correction import CorrectionProgressPush
from app.texts import CS, EN, Texts
from tests.support import FakeClock


class Recorder:
    def __init__(self) -> None:
        self.pushes: list[dict] = []

    async def push_correction_progress(self, push: CorrectionProgressPush) -> None:
        self.pushes.append(push.wire())

    def push_correction_progress_nowait(self, push: CorrectionProgressPush) -> None:
        self.pushes.append(push.wire())


@pytest.mark.parametrize(("t", "first", "streaming", "second", "done"), [
    (CS, "Korekce chunk 1/2", "Korekce chunk 1/2: generuji (11 tokenů)", "Korekce chunk 2/2", "Korekce dokončena"),
    (EN, "Correction chunk 1/2", "Correction chunk 1/2: generating (11 tokens)", "Correction chunk 2/2",
     "Correction finished"),
], ids=["cs", "en"])
async def test_per_chunk_then_throttled_stream_then_final(t: Texts, first: str, streaming: str, second: str,
                                                          done: str) -> None:
    sink, clock = Recorder(), FakeClock()
    progress = CorrectionProgress(sink, meeting_id="m1", client_id="c1", total_chunks=2, t=t, interval=10,
                                  clock=clock)
    await progress.chunk_started(0, expected_tokens=100)
    for count in range(1, 11):  # ten tokens within 9 s: no push
        clock.now += 0.9
        progress.on_token(count)
    assert len(sink.pushes) == 1
    clock.now += 1.5
    progress.on_token(11)  # 10.5 s after the chunk push
    progress.on_token(12)  # right after: throttled
    await progress.chunk_started(1, expected_tokens=100)
    progress.on_token(1)
    await progress.finished()

    assert [(p["percent"], p["chunksDone"], p["totalChunks"]) for p in sink.pushes] == [
        (0.0, 0, 2), (5.5, 0, 2), (50.0, 1, 2), (100.0, 2, 2)]
    assert sink.pushes[0] == {"meetingId": "m1", "clientId": "c1", "percent": 0.0, "chunksDone": 0,
                              "totalChunks": 2, "message": first, "tokensGenerated": 0}
    assert sink.pushes[1]["tokensGenerated"] == 11 and sink.pushes[1]["message"] == streaming
    assert sink.pushes[2]["message"] == second and sink.pushes[2]["tokensGenerated"] == 12
    assert sink.pushes[3]["tokensGenerated"] == 13 and sink.pushes[3]["message"] == done
    assert all(isinstance(p["percent"], float) for p in sink.pushes)


async def test_tokens_add_up_across_a_repair_round() -> None:
    sink = Recorder()
    progress = CorrectionProgress(sink, meeting_id="m1", client_id="c1", total_chunks=1, t=CS, interval=0)
    await progress.chunk_started(0)
    progress.on_token(40)
    progress.on_token(5)  # the repair call restarts its count
    assert progress.tokens == 45


async def test_nothing_is_pushed_without_a_meeting() -> None:
    sink = Recorder()
    progress = CorrectionProgress(sink, meeting_id=None, client_id="c1", total_chunks=2, t=CS, interval=0)
    await progress.chunk_started(0)
    progress.on_token(1)
    await progress.finished()
    assert sink.pushes == [] and progress.pushes == 0
