"""Service settings: the only place that reads environment variables (names as spec §19.1)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
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
    #: Local runner: the agent command the entrypoint runs for every agent type (argv, JSON
    #: list). Empty = the built-in deterministic agent (`app/agents/scripted_agent.py`), which
    #: only applies file edits the instructions spell out. `LOCAL_REAL_AGENTS=true` runs the real
    #: agent of each step instead (aider / claude / … must be on PATH).
    local_agent_command: list[str] = Field(default_factory=list)
    local_real_agents: bool = False
    #: Kubernetes runner (spec §10): images `{container_registry}/{agent_images[agent]}:{agent_image_tag}`.
    agent_images: dict[str, str] = Field(default_factory=lambda: {
        "aider": "jervis-aider", "openhands": "jervis-coding-engine", "claude": "jervis-claude", "junie": "jervis-junie",
    })
    agent_image_tag: str = "latest"
    agent_concurrency: dict[str, int] = Field(default_factory=lambda: {
        "aider": 3, "openhands": 2, "claude": 2, "junie": 1,
    })
    agent_models: dict[str, str] = Field(default_factory=lambda: {
        "aider": "ollama_chat/qwen3-coder-tool:30b", "openhands": "ollama/qwen3-coder-tool:30b",
        "claude": "claude-sonnet-4-5", "junie": "",
    })
    #: The agent image whose Job runs git (commit / push) after the user's approval.
    git_agent: str = "claude"
    kubeconfig: str | None = None
    pvc_claim_name: str = "jervis-data-pvc"
    agent_secret_name: str = "jervis-agent-secrets"
    #: Secret keys exposed to agent Jobs as env vars of the same name (by reference, optional).
    agent_secret_keys: list[str] = Field(default_factory=lambda: [
        "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "JUNIE_API_KEY", "GIT_TOKEN",
    ])
    agent_service_account: str | None = None
    job_ttl_seconds: int = 300
    agent_cpu_request: str = "250m"
    agent_memory_request: str = "256Mi"
    agent_cpu_limit: str = "1000m"
    agent_memory_limit: str = "1Gi"
    k8s_request_timeout_seconds: float = 30.0
    #: How often a waiting runner re-checks a Job and its pod (a watch wakes it sooner).
    k8s_poll_seconds: float = 2.0
    agent_timeouts: dict[str, int] = Field(
        default_factory=lambda: {"aider": 600, "openhands": 1800, "claude": 1800, "junie": 1200}
    )
    agent_selection: dict[str, AgentName] = Field(default_factory=lambda: dict(DEFAULT_AGENT_SELECTION))

    local_model: str = "qwen3-coder-tool:30b"
    #: An OpenAI-compatible local server instead of Ollama (the embedded model of `app/dev.py`).
    local_llm_api_base: str | None = None
    local_llm_model: str = "openai/local"
    #: The local server's real context window: caps the local tiers, so a call that does not fit
    #: escalates instead of being refused (the embedded model has 16k).
    local_context_tokens: int | None = None
    #: Cloud tiers (spec §8.1): litellm model strings; keys enable them.
    cloud_reasoning_model: str = "anthropic/claude-sonnet-4-5"
    cloud_coding_model: str = "openai/gpt-4o"
    cloud_premium_model: str = "anthropic/claude-opus-4-6"
    cloud_large_context_model: str = "gemini/gemini-2.5-pro"
    anthropic_api_key: SecretStr | None = None
    openai_api_key: SecretStr | None = None
    google_api_key: SecretStr | None = None
    #: Provider endpoints (defaults: the providers' public APIs, as litellm knows them).
    anthropic_api_base: str | None = None
    openai_api_base: str | None = None
    gemini_api_base: str | None = None
    heartbeat_dead_seconds: float = 300.0
    llm_max_output_tokens: int = 4096
    llm_retries: int = 2
    llm_retry_base_delay: float = 1.0
    #: A provider that failed this many calls in a row is skipped for `llm_breaker_seconds`.
    llm_breaker_failures: int = 3
    llm_breaker_seconds: float = 60.0
    llm_health_cache_seconds: float = 60.0
    #: Budgets per orchestration (None = unlimited); a request may set its own.
    budget_max_tokens: int | None = None
    budget_max_cost_usd: float | None = None
    budget_max_seconds: float | None = None
    budget_warn_fraction: float = 0.8
    #: At 100 %: "stop" ends the run with an error; "ask" interrupts for approval to continue.
    budget_on_exceeded: Literal["stop", "ask"] = "stop"

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
    #: KB ingest embeds the text while the request waits: writes get longer.
    kb_write_timeout_seconds: float = 60.0
    #: Correction progress while a chunk streams, at most this often (contract §3.3: ~10 s).
    correction_progress_interval_seconds: float = 10.0
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
