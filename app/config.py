"""Service settings: the only place that reads environment variables (names as spec §19.1)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

AgentName = Literal["aider", "openhands", "claude", "junie"]

#: Complexity → agent, from the "Agent Selection Strategy" table at the top of the spec.
DEFAULT_AGENT_SELECTION: dict[str, AgentName] = {
    "simple": "aider",
    "medium": "openhands",
    "complex": "openhands",
    "critical": "claude",
}


def _default_pod_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class Settings(BaseSettings):
    """Validated at start-up; defaults are loopback or in-cluster service names, never a private IP."""

    model_config = SettingsConfigDict(extra="ignore", env_ignore_empty=True)

    host: str = "0.0.0.0"
    port: int = 8090

    mongodb_url: str = "mongodb://localhost:27017"
    mongodb_database: str = "jervis_orchestrator"
    checkpoint_database: str = "jervis_checkpoints"

    kotlin_server_url: str = "http://jervis-server:5500"
    knowledgebase_url: str = "http://jervis-knowledgebase:8080"
    knowledgebase_write_url: str | None = None
    ollama_url: str = "http://localhost:11434"

    k8s_namespace: str = "jervis"
    data_root: Path = Path("/opt/jervis/data")
    container_registry: str = "localhost:5000/jervis"
    agent_runner: Literal["local", "kubernetes"] = "local"
    #: Command the local runner starts for every agent (argv, JSON list). Empty = the built-in
    #: deterministic agent (`app/agents/scripted_agent.py`), which only edits files the
    #: instructions spell out; point it at a real agent entrypoint for real work.
    local_agent_command: list[str] = Field(default_factory=list)
    agent_timeouts: dict[str, int] = Field(
        default_factory=lambda: {"aider": 600, "openhands": 1800, "claude": 1800, "junie": 1200}
    )
    agent_selection: dict[str, AgentName] = Field(default_factory=lambda: dict(DEFAULT_AGENT_SELECTION))

    local_model: str = "qwen3-coder-tool:30b"
    heartbeat_dead_seconds: float = 300.0
    llm_max_output_tokens: int = 4096

    max_concurrent_orchestrations: int = Field(default=1, ge=1)
    lock_heartbeat_seconds: float = 10.0
    lock_stale_seconds: float = 300.0
    pod_id: str = Field(default_factory=_default_pod_id)
    #: How often a pod looks for runs orphaned by a dead pod (and adopts them).
    recovery_interval_seconds: float = 30.0
    #: On SIGTERM, running nodes get this long to finish; then the run is suspended (left
    #: `running` in MongoDB) and another pod, or this one after its restart, continues it.
    shutdown_grace_seconds: float = 20.0

    context_ttl_days: int = 30
    recursion_limit: int = 150
    response_language: str = "cs"

    kb_timeout_seconds: float = 10.0
    push_timeout_seconds: float = 5.0
    push_attempts: int = 3
    tracker_timeout_seconds: float = 30.0
    health_cache_seconds: float = 5.0
    #: Events kept per thread for SSE replay (`Last-Event-ID`).
    stream_buffer_events: int = 2000

    @field_validator("kotlin_server_url", "knowledgebase_url", "ollama_url", "knowledgebase_write_url")
    @classmethod
    def _strip_slash(cls, value: str | None) -> str | None:
        return value.rstrip("/") if value else value

    @field_validator("agent_selection")
    @classmethod
    def _complete_selection(cls, value: dict[str, AgentName]) -> dict[str, AgentName]:
        missing = set(DEFAULT_AGENT_SELECTION) - set(value)
        if missing:
            raise ValueError(f"agent_selection lacks complexities: {sorted(missing)}")
        return value

    @property
    def kb_write_url(self) -> str:
        return self.knowledgebase_write_url or self.knowledgebase_url

    @property
    def workspaces_root(self) -> Path:
        return self.data_root.resolve()
