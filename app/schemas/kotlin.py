"""Wire DTOs exactly as the Kotlin client speaks them (`docs/api.md`).

Inbound models ignore unknown keys and accept explicit nulls (Kotlin sends every field with
`encodeDefaults = true`). Outbound push bodies are camelCase; `/status` values are strings only.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Inbound(BaseModel):
    model_config = ConfigDict(extra="ignore")


#: Longest identifier (Kotlin sends 24-hex ObjectIds) and name accepted; free text is bounded by
#: `MAX_TEXT_CHARS` in the routes, since that is a setting.
ID_CHARS = 200
NAME_CHARS = 1000
PATH_CHARS = 1024


def _null_to_default(value: Any, default: Any) -> Any:
    return default if value is None else value


class ProjectRules(_Inbound):
    branch_naming: str = "task/{taskId}"
    commit_prefix: str = "task({taskId}):"
    require_review: bool = False
    require_tests: bool = False
    require_approval_commit: bool = True
    require_approval_push: bool = True
    allowed_branches: list[str] = Field(default_factory=lambda: ["task/*", "fix/*"])
    forbidden_files: list[str] = Field(default_factory=lambda: ["*.env", "secrets/*"])
    max_changed_files: int = Field(default=20, ge=0)
    auto_push: bool = False
    auto_use_anthropic: bool = False
    auto_use_openai: bool = False
    auto_use_gemini: bool = False


class ChatHistoryMessage(_Inbound):
    role: str
    content: str
    timestamp: str
    sequence: int


class ChatSummaryBlock(_Inbound):
    sequence_range: str
    summary: str
    key_decisions: list[str] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    is_checkpoint: bool = False
    checkpoint_reason: str | None = None


class ChatHistoryPayload(_Inbound):
    recent_messages: list[ChatHistoryMessage]
    summary_blocks: list[ChatSummaryBlock] = Field(default_factory=list)
    total_message_count: int = 0

    @field_validator("summary_blocks", mode="before")
    @classmethod
    def _blocks(cls, value: Any) -> Any:
        return _null_to_default(value, [])

    @field_validator("total_message_count", mode="before")
    @classmethod
    def _count(cls, value: Any) -> Any:
        return _null_to_default(value, 0)


class RequestBudget(_Inbound):
    max_tokens: int | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_seconds: float | None = Field(default=None, gt=0)


class OrchestrateRequest(_Inbound):
    """`OrchestrateRequestDto` (snake_case)."""

    task_id: str = Field(min_length=1, max_length=ID_CHARS)
    client_id: str = Field(min_length=1, max_length=ID_CHARS)
    project_id: str | None = Field(default=None, max_length=ID_CHARS)
    client_name: str | None = Field(default=None, max_length=NAME_CHARS)
    project_name: str | None = Field(default=None, max_length=NAME_CHARS)
    workspace_path: str = Field(max_length=PATH_CHARS)
    query: str = Field(min_length=1)
    agent_preference: str = "auto"
    rules: ProjectRules = Field(default_factory=ProjectRules)
    environment: dict[str, Any] | None = None
    jervis_project_id: str | None = Field(default=None, max_length=ID_CHARS)
    chat_history: ChatHistoryPayload | None = None
    budget: RequestBudget | None = None
    """Not sent by Kotlin today: per-run limits that override the service's defaults."""
    new_project: bool = False
    """Not sent by Kotlin: the request starts a new project, so a `workspace_path` that is not there
    yet is created empty at dispatch. Without it a missing workspace is refused (422)."""

    @field_validator("new_project", mode="before")
    @classmethod
    def _new_project(cls, value: Any) -> Any:
        return _null_to_default(value, False)

    @field_validator("agent_preference", mode="before")
    @classmethod
    def _preference(cls, value: Any) -> Any:
        return _null_to_default(value, "auto")

    @field_validator("agent_preference")
    @classmethod
    def _known_agent(cls, value: str) -> str:
        value = value.strip().lower()
        allowed = {"auto", "aider", "openhands", "claude", "junie"}
        if value not in allowed:
            raise ValueError(f"agent_preference must be one of {sorted(allowed)}")
        return value

    @field_validator("rules", mode="before")
    @classmethod
    def _rules(cls, value: Any) -> Any:
        return _null_to_default(value, {})

    @field_validator("task_id")
    @classmethod
    def _task_id_shape(cls, value: str) -> str:
        # The thread id embeds the task id and Kotlin splits it on "-".
        if "-" in value or "/" in value or any(ch.isspace() for ch in value):
            raise ValueError("task_id must not contain '-', '/' or whitespace")
        return value

    @field_validator("workspace_path")
    @classmethod
    def _relative_workspace(cls, value: str) -> str:
        path = PurePosixPath(value)
        if not value.strip() or path.is_absolute() or value.startswith("\\"):
            raise ValueError("workspace_path must be a relative path under DATA_ROOT")
        if ".." in path.parts or "\x00" in value:
            raise ValueError("workspace_path must not contain '..'")
        return value


class ApprovalResponse(_Inbound):
    """`ApprovalResponseDto`: `approved` is required, the rest arrive as explicit nulls."""

    approved: bool
    modification: str | None = None
    reason: str | None = None


class StreamStartResponse(BaseModel):
    thread_id: str
    stream_url: str


class StepResultOut(BaseModel):
    step_index: int
    success: bool
    summary: str
    agent_type: str | None = None
    changed_files: list[str] = Field(default_factory=list)


class OrchestrateResponse(BaseModel):
    task_id: str
    success: bool
    summary: str
    branch: str | None = None
    artifacts: list[str] = Field(default_factory=list)
    step_results: list[StepResultOut] = Field(default_factory=list)
    thread_id: str


class _Push(BaseModel):
    """Python → Kotlin push: camelCase through aliases, dumped with `by_alias=True`."""

    model_config = ConfigDict(populate_by_name=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)


class ProgressPush(_Push):
    """`OrchestratorProgressCallback`. Indices are ints (Kotlin rejects `1.0`)."""

    task_id: str = Field(alias="taskId")
    client_id: str = Field(alias="clientId")
    node: str
    message: str
    percent: float = 0.0
    goal_index: int = Field(default=0, alias="goalIndex")
    total_goals: int = Field(default=0, alias="totalGoals")
    step_index: int = Field(default=0, alias="stepIndex")
    total_steps: int = Field(default=0, alias="totalSteps")


class StatusPush(_Push):
    """`OrchestratorStatusCallback`. `artifacts` is never null."""

    task_id: str = Field(alias="taskId")
    client_id: str = Field(default="", alias="clientId")
    thread_id: str = Field(alias="threadId")
    status: str
    summary: str | None = None
    error: str | None = None
    interrupt_action: str | None = Field(default=None, alias="interruptAction")
    interrupt_description: str | None = Field(default=None, alias="interruptDescription")
    branch: str | None = None
    artifacts: list[str] = Field(default_factory=list)


class TrackerCreateIssue(_Push):
    client_id: str = Field(alias="clientId")
    project_id: str | None = Field(default=None, alias="projectId")
    title: str
    description: str = ""
    type: str = "task"
    parent_key: str | None = Field(default=None, alias="parentKey")


class TrackerUpdateIssue(_Push):
    client_id: str = Field(alias="clientId")
    project_id: str | None = Field(default=None, alias="projectId")
    issue_key: str = Field(alias="issueKey")
    status: str | None = None
    comment: str | None = None


def status_reply(thread_id: str, status: str, **fields: Any) -> dict[str, str]:
    """`GET /status` body: Kotlin decodes it as `Map<String, String>`, so nulls are dropped,
    lists are comma-joined and everything else is stringified."""
    body: dict[str, str] = {"status": status, "thread_id": thread_id}
    for key, value in fields.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            body[key] = ",".join(str(item) for item in value)
        elif isinstance(value, bool):
            body[key] = "true" if value else "false"
        else:
            body[key] = str(value)
    return body
