"""The model's answer → segments and questions. The model only changes text: `i`, times and
speaker always come from the input, and a segment the model drops or invents changes nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.schemas.correction import CorrectionQuestion, CorrectionSegment


def _null_to_list(value: Any) -> Any:
    return [] if value is None else value


class ModelSegment(BaseModel):
    model_config = ConfigDict(extra="ignore")

    i: int
    text: str


class ModelQuestion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    i: int
    original: str = ""
    question: str
    options: list[str] = Field(default_factory=list)

    @field_validator("original", mode="before")
    @classmethod
    def _null_original(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("options", mode="before")
    @classmethod
    def _options(cls, value: Any) -> Any:
        value = _null_to_list(value)
        return [str(v) for v in value] if isinstance(value, list) else value


class ModelRule(BaseModel):
    model_config = ConfigDict(extra="ignore")

    original: str
    corrected: str
    category: str = "general"

    @field_validator("category", mode="before")
    @classmethod
    def _category(cls, value: Any) -> Any:
        return value.strip() or "general" if isinstance(value, str) else "general"


class CorrectionReply(BaseModel):
    """What `/correction/correct` asks the model for."""

    model_config = ConfigDict(extra="ignore")

    segments: list[ModelSegment]
    questions: list[ModelQuestion] = Field(default_factory=list)

    @field_validator("questions", mode="before")
    @classmethod
    def _questions(cls, value: Any) -> Any:
        return _null_to_list(value)


class InstructReply(BaseModel):
    """What `/correction/instruct` asks the model for."""

    model_config = ConfigDict(extra="ignore", validate_by_alias=True, validate_by_name=True)

    segments: list[ModelSegment]
    new_rules: list[ModelRule] = Field(default_factory=list, alias="newRules")
    summary: str | None = None

    @field_validator("new_rules", mode="before")
    @classmethod
    def _rules(cls, value: Any) -> Any:
        return _null_to_list(value)


def merge_texts(
    segments: Sequence[CorrectionSegment], proposed: Iterable[ModelSegment], allowed: set[int] | None = None
) -> list[CorrectionSegment]:
    """`segments` with the model's text for each `i` it was asked about (`allowed`; default all).

    The first answer for an `i` wins; blank text keeps the original (the model corrects, it
    does not delete).
    """
    allowed = {s.i for s in segments} if allowed is None else allowed
    texts: dict[int, str] = {}
    for item in proposed:
        if item.i in allowed and item.i not in texts and item.text.strip():
            texts[item.i] = item.text.strip()
    return [s.model_copy(update={"text": texts[s.i]}) if s.i in texts else s for s in segments]


def build_questions(
    proposed: Iterable[ModelQuestion], segments: Sequence[CorrectionSegment], allowed: set[int] | None = None
) -> list[CorrectionQuestion]:
    """Questions about segments the model was asked about; the segment's text is the context."""
    by_index = {s.i: s for s in segments}
    allowed = set(by_index) if allowed is None else allowed
    questions = []
    for item in proposed:
        if item.i not in allowed or item.i not in by_index or not item.question.strip():
            continue
        source = by_index[item.i].text
        questions.append(CorrectionQuestion(
            id=f"q-{uuid.uuid4().hex[:8]}", i=item.i, original=item.original or source,
            question=item.question.strip(), options=[o for o in item.options if o.strip()], context=source,
        ))
    return questions
