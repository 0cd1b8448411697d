"""`/correction/*` wire DTOs and the correction-progress push (`docs/api.md`, transcript correction).

Every body is camelCase. Inbound models accept only the camelCase keys, ignore unknown ones and
take an explicit `null` in a field with a Kotlin default as that default (Kotlin sends every
field). Outbound models are built by field name and dumped by alias; every field Kotlin needs
is always present and never null where the Kotlin type is non-null.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

#: Every correction rule's KB `sourceUrn` starts with this; the rest is the correction id.
CORRECTION_URN_PREFIX = "transcript-correction::"


class _Inbound(BaseModel):
    """Kotlin → Python body: camelCase keys only, unknown keys ignored."""

    model_config = ConfigDict(extra="ignore", alias_generator=to_camel, validate_by_alias=True,
                              validate_by_name=False)

    #: Fields (python names) whose Kotlin type is non-null with a default: `null` → the default.
    _null_is_default: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls_of_defaulted_fields(cls, data: Any) -> Any:
        if isinstance(data, dict) and cls._null_is_default:
            aliases = {to_camel(name) for name in cls._null_is_default}
            return {k: v for k, v in data.items() if not (k in aliases and v is None)}
        return data


class _Outbound(BaseModel):
    """Python → Kotlin body: built by field name, serialised camelCase."""

    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)


def _client_id_field() -> Any:
    # An empty clientId would make the KB drop its tenant filter (every client's rules).
    return Field(min_length=1)


class CorrectionSegment(BaseModel):
    """`CorrectionSegmentDto`, both directions."""

    model_config = ConfigDict(extra="ignore", alias_generator=to_camel, validate_by_alias=True,
                              validate_by_name=False, serialize_by_alias=True)

    i: int
    start_sec: float
    end_sec: float
    text: str
    speaker: str | None = None


# ------------------------------------------------------------------------- requests
class CorrectionSubmitRequest(_Inbound):
    _null_is_default = ("category",)

    client_id: str = _client_id_field()
    project_id: str | None = None
    original: str
    corrected: str
    category: str = "general"
    context: str | None = None

    @field_validator("original")
    @classmethod
    def _original_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("original must not be blank")
        return value

    @field_validator("category")
    @classmethod
    def _category(cls, value: str) -> str:
        return value.strip() or "general"


class CorrectionRequest(_Inbound):
    """`CorrectionRequestDto` (`/correction/correct`)."""

    _null_is_default = ("chunk_size",)

    client_id: str = _client_id_field()
    project_id: str | None = None
    meeting_id: str | None = None
    segments: list[CorrectionSegment]
    chunk_size: int = Field(default=20, ge=1)


class CorrectionTargetedRequest(_Inbound):
    """`CorrectionTargetedRequestDto` (`/correction/correct-targeted`)."""

    _null_is_default = ("user_corrected_indices",)

    client_id: str = _client_id_field()
    project_id: str | None = None
    meeting_id: str | None = None
    segments: list[CorrectionSegment]
    retranscribed_indices: list[int]
    user_corrected_indices: dict[str, str] = Field(default_factory=dict)

    @field_validator("user_corrected_indices")
    @classmethod
    def _integer_keys(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [key for key in value if not key.strip().lstrip("-").isdigit()]
        if bad:
            raise ValueError(f"keys must be segment indices (integers as strings), got {bad}")
        return value

    @property
    def user_corrections(self) -> dict[int, str]:
        return {int(key): text for key, text in self.user_corrected_indices.items()}


class CorrectionListRequest(_Inbound):
    _null_is_default = ("max_results",)

    client_id: str = _client_id_field()
    project_id: str | None = None
    max_results: int = Field(default=100, ge=1)


class CorrectionAnswerItem(_Inbound):
    _null_is_default = ("category",)

    original: str
    corrected: str
    category: str = "general"
    context: str | None = None

    @field_validator("category")
    @classmethod
    def _category(cls, value: str) -> str:
        return value.strip() or "general"


class CorrectionAnswerRequest(_Inbound):
    client_id: str = _client_id_field()
    project_id: str | None = None
    answers: list[CorrectionAnswerItem]


class CorrectionInstructRequest(_Inbound):
    """`CorrectionInstructRequestDto`: there is no meetingId, so no progress is pushed."""

    client_id: str = _client_id_field()
    project_id: str | None = None
    segments: list[CorrectionSegment]
    instruction: str

    @field_validator("instruction")
    @classmethod
    def _instruction_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("instruction must not be blank")
        return value


class CorrectionDeleteRequest(_Inbound):
    source_urn: str

    @field_validator("source_urn")
    @classmethod
    def _correction_urn(cls, value: str) -> str:
        # KB purge is not tenant-scoped and deletes any document: only correction rules here.
        if not value.startswith(CORRECTION_URN_PREFIX) or len(value) == len(CORRECTION_URN_PREFIX):
            raise ValueError(f"sourceUrn must be a correction rule ('{CORRECTION_URN_PREFIX}<id>')")
        return value


# ------------------------------------------------------------------------ responses
class CorrectionSubmitResult(_Outbound):
    """`CorrectionSubmitResultDto`: all three strings required by Kotlin."""

    correction_id: str
    source_urn: str
    status: str


class CorrectionQuestion(_Outbound):
    """`CorrectionQuestionPythonDto`."""

    id: str
    i: int
    original: str
    question: str
    options: list[str] = Field(default_factory=list)
    context: str | None = None


class CorrectionResult(_Outbound):
    """`CorrectionResultDto` (`correct`, `correct-targeted`)."""

    segments: list[CorrectionSegment]
    questions: list[CorrectionQuestion] = Field(default_factory=list)
    status: str
    uncorrected: list[int] = Field(default_factory=list, exclude_if=lambda indices: not indices)
    """Segment indices (`i`) kept as sent because the model's reply for their chunk was unreadable
    (an extension, left out when empty: Kotlin ignores unknown keys, and keeps the transcript
    instead of failing it)."""


class CorrectionRuleMetadata(_Outbound):
    """What Kotlin's `CorrectionChunkDto.metadata` reads: every value a non-null string."""

    original: str = ""
    corrected: str = ""
    category: str = "general"
    context: str = ""
    correction_id: str = ""


class CorrectionChunk(_Outbound):
    content: str = ""
    source_urn: str = ""
    metadata: CorrectionRuleMetadata = Field(default_factory=CorrectionRuleMetadata)


class CorrectionListResult(_Outbound):
    corrections: list[CorrectionChunk] = Field(default_factory=list)


class CorrectionAnswerResult(_Outbound):
    status: str = "success"
    rules_created: int


class CorrectionInstructResult(_Outbound):
    """`CorrectionInstructResultDto`."""

    segments: list[CorrectionSegment] = Field(default_factory=list)
    new_rules: list[CorrectionSubmitResult] = Field(default_factory=list)
    status: str
    summary: str | None = None


class CorrectionProgressPush(_Outbound):
    """`CorrectionProgressCallback` (§3.3): percent is a double, the counters are ints."""

    meeting_id: str
    client_id: str
    percent: float
    chunks_done: int
    total_chunks: int
    message: str | None = None
    tokens_generated: int = 0
