"""The model's answer merged into the input: it only ever changes text."""

from __future__ import annotations

from app.correction.merge import (
    CorrectionReply,
    InstructReply,
    ModelQuestion,
    ModelSegment,
    build_questions,
    merge_texts,
)
from app.schemas.correction import CorrectionSegment


def seg(i: int, text: str, speaker: str | None = "SPEAKER_00") -> CorrectionSegment:
    return CorrectionSegment.model_validate({"i": i, "startSec": i * 2.5, "endSec": i * 2.5 + 2.0, "text": text,
                                             "speaker": speaker})


def test_text_changes_everything_else_comes_from_the_input() -> None:
    segments = [seg(0, "dobry den"), seg(1, "kubernetis", speaker=None), seg(2, "konec")]
    proposed = [ModelSegment(i=1, text="Kubernetes"), ModelSegment(i=0, text="Dobrý den")]
    merged = merge_texts(segments, proposed)
    assert [s.text for s in merged] == ["Dobrý den", "Kubernetes", "konec"]  # i=2 dropped → original stays
    assert [(s.i, s.start_sec, s.end_sec, s.speaker) for s in merged] == [
        (s.i, s.start_sec, s.end_sec, s.speaker) for s in segments]
    assert merged[1].model_dump(by_alias=True) == {"i": 1, "startSec": 2.5, "endSec": 4.5, "text": "Kubernetes",
                                                   "speaker": None}


def test_invented_blank_and_repeated_segments_change_nothing() -> None:
    segments = [seg(0, "a"), seg(1, "b")]
    proposed = [ModelSegment(i=7, text="invented"), ModelSegment(i=0, text="   "), ModelSegment(i=1, text="B"),
                ModelSegment(i=1, text="second answer")]
    assert [s.text for s in merge_texts(segments, proposed)] == ["a", "B"]


def test_only_allowed_indices_are_taken() -> None:
    segments = [seg(0, "context"), seg(1, "target")]
    merged = merge_texts(segments, [ModelSegment(i=0, text="X"), ModelSegment(i=1, text="Y")], allowed={1})
    assert [s.text for s in merged] == ["context", "Y"]


def test_questions_get_ids_and_context_and_unknown_segments_are_dropped() -> None:
    segments = [seg(3, "tady Jan Damek"), seg(4, "ok")]
    proposed = [ModelQuestion(i=3, original="Damek", question="Jak se píše příjmení?", options=["Damek", "Dámek", ""]),
                ModelQuestion(i=9, original="x", question="invented segment?"),
                ModelQuestion(i=4, question="  ")]
    questions = build_questions(proposed, segments)
    assert len(questions) == 1
    q = questions[0].model_dump(by_alias=True)
    assert q["id"].startswith("q-") and q["i"] == 3 and q["original"] == "Damek"
    assert q["options"] == ["Damek", "Dámek"] and q["context"] == "tady Jan Damek"


def test_model_reply_tolerates_nulls_and_accepts_both_rule_spellings() -> None:
    reply = CorrectionReply.model_validate({"segments": [{"i": "1", "text": "x"}], "questions": None})
    assert reply.segments[0].i == 1 and reply.questions == []
    question = ModelQuestion.model_validate({"i": 0, "original": None, "question": "?", "options": None})
    assert question.original == "" and question.options == []
    assert InstructReply.model_validate({"segments": [], "newRules": [{"original": "a", "corrected": "b"}]}
                                        ).new_rules[0].category == "general"
    assert len(InstructReply.model_validate({"segments": [], "new_rules": [{"original": "a", "corrected": "b",
                                                                            "category": None}]}).new_rules) == 1
