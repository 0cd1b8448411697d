"""Service settings: the only place that reads environment variables (names as spec §19.1)."""

from __future__ import annotations

import ipaddress
import json
from typing import Annotated, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from app.agent_settings import AgentSettings
from app.console_settings import ConsoleSettings

CloudTierName = Literal["cloud_reasoning", "cloud_coding", "cloud_premium", "cloud_large_context"]


class TokenPrice(BaseModel):
    """USD per million tokens of one model (`LLM_TIER_PRICES`)."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


class Settings(AgentSettings, ConsoleSettings):
    """Validated at start-up; defaults are loopback or in-cluster service names, never a private IP.

    Each field's docstring is its documentation: docs/configuration.md's table is generated
    from them (`python -m tools.readme`).
    """

    model_config = SettingsConfigDict(extra="ignore", env_ignore_empty=True, use_attribute_docstrings=True)

    host: str = "127.0.0.1"
    """Listen address of `python -m app.serve` (the image's command, `HOST=0.0.0.0` there) and `python -m app.dev`:
    loopback unless told otherwise. Beyond loopback the service refuses to start without `API_TOKEN` (or
    `ALLOW_NO_TOKEN=true`)."""
    port: int = 8090
    """Listen port of `python -m app.serve` and `python -m app.dev`."""

    mongodb_url: str = "mongodb://localhost:27017"
    """MongoDB for checkpoints, lock, context store and run registry (`scripts/run.sh` starts an embedded nx-27017
    when unset). May carry credentials: keep it in a Secret."""
    mongodb_database: str = "jervis_orchestrator"
    """Database of the lock, context store and run registry."""
    checkpoint_database: str = "jervis_checkpoints"
    """Database of the LangGraph checkpoints."""
    kotlin_mongodb_database: str | None = None
    """The Kotlin server's database on the same MongoDB: when set, the spec §20.3 indexes of its `chat_messages`,
    `chat_summaries` and `tasks` are ensured at start-up."""
    mongodb_timeout_seconds: float = Field(default=5.0, ge=1)
    """Server selection and connect timeout of every MongoDB client (checkpoints included): an unreachable MongoDB
    fails an operation, and shows in `/health`, within this time instead of pymongo's 30 s. At least 1 s: a client
    looks for a lost server again at most every 0.5 s."""
    mongodb_socket_timeout_seconds: float = Field(default=60.0, gt=0)
    """A MongoDB operation whose reply takes longer fails (a network partition without a reset is noticed); no
    operation of the service comes near it."""
    mongodb_write_concern: str = Field(default="majority", pattern=r"^(majority|[1-9][0-9]*)$")
    """`w` of every MongoDB write, always journaled (overrides `w` in the URL): `majority` survives a replica set's
    failover and works on a single node; a number of members works only on a replica set of at least that size."""
    mongodb_read_concern: Literal["local", "majority", "linearizable"] = "majority"
    """MongoDB reads see only writes a failover cannot roll back (`majority`), also the newest one after a failover
    (`linearizable`: replica set only, a round trip to a majority per read), or any write (`local`)."""
    mongodb_outage_wait_seconds: float = Field(default=120.0, ge=0)
    """A run whose MongoDB operation fails because MongoDB is unreachable keeps its slot and waits this long
    (pinging with backoff up to 5 s apart), then continues from its last checkpoint; past it the run is suspended,
    left `running` for recovery, never failed. Keep it well below `LOCK_STALE_SECONDS`."""

    kotlin_server_url: str = "http://jervis-server:5500"
    """Where progress and status pushes and tracker calls go."""
    knowledgebase_url: str = "http://jervis-knowledgebase:8080"
    """Knowledge Base (read service)."""
    knowledgebase_write_url: str | None = None
    """Knowledge Base write service (default: the read URL)."""
    ollama_url: str = "http://localhost:11434"
    """Ollama serving the local tiers."""


    local_model: str = "qwen3-coder-tool:30b"
    """Ollama model of the local tiers."""
    local_llm_api_base: str | None = None
    """An OpenAI-compatible local server instead of Ollama (set by `scripts/run.sh` for the embedded model)."""
    local_llm_model: str = "openai/local"
    """litellm model string for `LOCAL_LLM_API_BASE`."""
    local_context_tokens: int | None = None
    """The local server's context window: caps the local tiers, so a larger call escalates instead of being refused."""
    cloud_reasoning_model: str = "anthropic/claude-sonnet-4-5"
    """Cloud tier for reasoning (litellm model string)."""
    cloud_coding_model: str = "openai/gpt-4o"
    """Cloud tier for coding."""
    cloud_premium_model: str = "anthropic/claude-opus-4-6"
    """Cloud tier for critical work."""
    cloud_large_context_model: str = "gemini/gemini-2.5-pro"
    """Cloud tier for very long prompts."""
    anthropic_api_key: SecretStr | None = None
    """Enables the Anthropic tiers (never logged)."""
    openai_api_key: SecretStr | None = None
    """Enables the OpenAI tier (never logged)."""
    google_api_key: SecretStr | None = None
    """Enables the Gemini tier (never logged)."""
    anthropic_api_base: str | None = None
    """Anthropic endpoint override (default: the public API)."""
    openai_api_base: str | None = None
    """OpenAI endpoint override."""
    gemini_api_base: str | None = None
    """Gemini endpoint override."""
    heartbeat_dead_seconds: float = 300.0
    """No token for this long = the model is dead (the call escalates or fails); there is no total timeout."""
    llm_queue_wait_seconds: float = Field(default=1800.0, gt=0)
    """How long a call to a local model (Ollama, the embedded server) may wait for the server to take it: a server
    that answers one request at a time keeps the others waiting, connected, while it generates. The wait is
    queueing, not a dead model, as long as the server accepts connections; after this the call fails as a
    heartbeat timeout (the model was busy). Once the answer starts, `HEARTBEAT_DEAD_SECONDS` applies per token."""
    llm_queue_check_seconds: float = Field(default=5.0, gt=0)
    """While a local call waits for its turn, a bare TCP connect to the server this often: refused = the server is
    gone and the call fails at once as offline."""
    llm_retries: int = 2
    """Retries of a transient LLM failure, with exponential backoff."""
    llm_retry_base_delay: float = 1.0
    """First retry delay in seconds."""
    llm_breaker_failures: int = 3
    """A provider that failed this many calls in a row is skipped for `LLM_BREAKER_SECONDS`."""
    llm_breaker_seconds: float = 60.0
    """How long a failing provider is skipped."""
    llm_health_cache_seconds: float = 60.0
    """How long `/health` reuses the LLM tiers' state (a BUSY local model's: 5 s at most)."""
    llm_health_timeout_seconds: float = Field(default=3.0, gt=0)
    """How long the LLM health check waits for a model listing. A local server that took the connection and did not
    answer in this time is BUSY (serving another request: llama-cpp-python's server, the embedded fallback, answers one
    at a time), not OFFLINE; a dispatch checking the local model waits at most this long."""
    budget_max_tokens: int | None = 500_000
    """Model tokens per orchestration, agents' reported tokens included (a small task on the embedded model: ~1.5k;
    a request may set its own; none = unlimited)."""
    budget_max_cost_usd: float | None = 5.0
    """Cost budget per orchestration in USD (only cloud calls cost)."""
    llm_tier_prices: dict[CloudTierName, TokenPrice] = Field(default_factory=lambda: dict[
        CloudTierName, TokenPrice]({
            "cloud_reasoning": TokenPrice(input_per_mtok=3.0, output_per_mtok=15.0),
            "cloud_coding": TokenPrice(input_per_mtok=2.5, output_per_mtok=10.0),
            "cloud_premium": TokenPrice(input_per_mtok=5.0, output_per_mtok=25.0),
            "cloud_large_context": TokenPrice(input_per_mtok=2.5, output_per_mtok=15.0),
        }))
    """Price of a cloud tier's model that litellm's bundled price map does not list (JSON, USD per million prompt /
    completion tokens; a listed model keeps litellm's price; a value replaces the whole table). Defaults: the list
    prices of the default models (Gemini 2.5 Pro's above 200k prompt tokens). A tier priced by neither counts in
    tokens and time only, said in `/health` (`warnings`) and the start-up log; local tiers cost nothing."""
    budget_max_seconds: float | None = 7200.0
    """Model time per orchestration (seconds spent in model calls)."""
    budget_warn_fraction: float = 0.8
    """Fraction of a budget at which the user is warned."""
    budget_on_exceeded: Literal["stop", "ask"] = "stop"
    """At 100 %: `stop` ends the run with an error saying what was spent; `ask` interrupts for approval to continue."""

    max_concurrent_orchestrations: int = Field(default=1, ge=1)
    """Orchestrations at once, per pod (semaphore) and across pods (MongoDB lock); more get HTTP 429."""
    lock_heartbeat_seconds: float = 10.0
    """Heartbeat of a held lock slot."""
    lock_stale_seconds: float = 300.0
    """A slot whose holder stopped heart-beating this long is taken over. The holder itself gives the lease up (and
    suspends the run) when its heartbeats have failed for this minus two heartbeats (at most half of it), so it
    stops before another pod can take over."""
    pod_id: str | None = Field(default=None, json_schema_extra={"doc_default": "<POD_NAME, else persisted>"})
    """Owner id of this pod's lock slots and runs. Unset: `POD_NAME`, else an id persisted under
    `DATA_ROOT/.orchestrator/pod-ids/` (an OS file lock keeps two live processes apart). Stable across restarts, so
    a restarted service frees its own slots and adopts its runs at once."""
    pod_name: str | None = None
    """The Kubernetes pod name (the Deployment sets it from the downward API): the pod id when `POD_ID` is unset. A
    restarted container keeps it."""
    recovery_interval_seconds: float = 30.0
    """How often a pod looks for runs orphaned by a dead pod and adopts them."""
    checkpoint_retention_days: float = Field(default=30.0, ge=0)
    """The checkpoints of a run that ended (done or error) are deleted this long after its end (its run record stays:
    /status and the run list answer as before, its detail page shows the record only); 0 keeps them forever. As
    long as the context store keeps a run's entries (30 days)."""
    checkpoint_retention_sweep_seconds: float = Field(default=3600.0, gt=0)
    """How often a pod deletes the checkpoints past `CHECKPOINT_RETENTION_DAYS` (at most 200 runs a sweep)."""
    shutdown_grace_seconds: float = 20.0
    """On SIGTERM, running nodes get this long to finish; then the run is suspended (its agent Job left running) and
    continued from its last checkpoint by another pod, or this one after its restart, which re-attaches to the Job."""

    context_ttl_days: int = 30
    """Lifetime of context-store entries."""
    recursion_limit: int = 400
    """LangGraph recursion limit of one run segment (a safety net: the recovery caps below end every loop first)."""
    response_language: str = "auto"
    """Language of answers, questions and reports: `auto` = the language of each request (Czech or English), or a
    code such as `cs` / `en` for every run."""

    recovery_max_attempts: int = Field(default=3, ge=1)
    """Agent attempts per step, the first included. When they are used up the user is asked once (retry with a hint,
    skip, replan or stop); after that the run stops."""
    agent_reads_tests: bool = False
    """Code steps get the test files covering their files as read-only context (Aider's `--read`); off, the
    instructions name them and the test command only. The embedded 1.5B model, given a test file, copied it into its
    answer (710 output tokens instead of 180: 100 s more at 7 tokens/s); a larger model reads it for the exact
    messages the tests expect."""
    reflection_from_attempt: int = Field(default=3, ge=1)
    """The first failed attempt of a step that the model reflects on; earlier failures are retried with the failure
    itself (failing tests, review issues) as the agent's feedback, and a failure that repeats an earlier one exactly
    is retried another way by rule. 1 reflects on every failure (a larger model). The embedded 1.5B model's
    reflections cost 20-33 s each on 2 cores and said nothing the failing test did not (empty root cause, "add a
    try-except"): by default it reflects on the last attempt only, for the question the user is then asked."""
    recovery_max_replans: int = Field(default=2, ge=0)
    """Replannings per run: after a failed step, or a plan gate refused with a reason."""
    epic_review_fixups: int = Field(default=1, ge=0)
    """Fix-up goals an epic's review may add (each reviewed again); issues left after them are reported."""
    epic_max_parallel_goals: int | None = Field(default=None, ge=1)
    """Goals of one wave worked on at once, each in its own git worktree; unset = 2 with the `kubernetes` runner, 1
    on the local runner (one local model server answers one request at a time, so parallel goals only queue)."""
    intake_by_rules: bool = True
    """Intake decides by rules where they are certain (an imperative request naming a file or function of the
    workspace is a code task, a plain question is advice) and asks the model only for the rest; `false` asks the
    model about every request (a larger model; the rules still correct its answer)."""
    report_writer: Literal["facts", "model"] = "facts"
    """Who writes a finished run's report: `facts` (the structured report from what the run did, no model call: a
    small model's report cost a minute and was replaced for Markdown or the wrong language) or `model` (a larger
    model writes 3-5 sentences from the same facts; unusable prose still falls back to the facts)."""
    clarification_max_rounds: int = Field(default=2, ge=0)
    """Rounds of clarifying questions intake may ask about an unclear request before it goes on with what it has."""
    recovery_max_questions: int = Field(default=3, ge=0)
    """Recovery questions (`clarify` interrupts after a failure) per run; past it a failure that needs the user
    stops the run."""
    test_timeout_seconds: int = Field(default=600, ge=1)
    """Deadline of one test run (`require_tests`), a Job's `activeDeadlineSeconds` on Kubernetes."""
    test_timeout_floor_seconds: float = Field(default=60.0, gt=0)
    """A later test run's deadline is ten times the longest that ran the tests to a verdict, never below this."""

    kb_timeout_seconds: float = 10.0
    """Timeout of a KB read."""
    kb_write_timeout_seconds: float = 60.0
    """Timeout of a KB write (ingest embeds the text while the request waits)."""
    correction_progress_interval_seconds: float = 10.0
    """Correction progress while a chunk streams, at most this often (`docs/api.md`, correction progress)."""
    push_timeout_seconds: float = 5.0
    """Timeout of one push to Kotlin."""
    outbox_status_expiry_seconds: float = Field(default=86_400.0, gt=0, le=31_536_000)
    """A status push Kotlin has not acknowledged by then is given up (counted in
    `jervis_kotlin_push_failures_total`); its identity stays taken as long again, so a crash replay does not send it
    twice."""
    outbox_progress_expiry_seconds: float = Field(default=900.0, gt=0, le=31_536_000)
    """A progress or correction-progress push is given up after this: a stale heartbeat is useless."""
    outbox_retry_base_seconds: float = Field(default=1.0, gt=0)
    """First retry delay of a failed push; doubled per attempt up to `OUTBOX_RETRY_MAX_SECONDS`, with jitter (half
    to all of it)."""
    outbox_retry_max_seconds: float = Field(default=60.0, gt=0)
    """Cap of the retry delay: once Kotlin answers again, a waiting push is delivered within about this long."""
    outbox_poll_seconds: float = Field(default=5.0, gt=0)
    """How often the outbox is searched for pushes due for a retry or left by another pod (a new push is sent at
    once)."""
    outbox_lease_seconds: float = Field(default=30.0, gt=0)
    """A push being sent is claimed for this long, so no other pod sends it meanwhile; must exceed
    `PUSH_TIMEOUT_SECONDS`."""
    outbox_memory_capacity: int = Field(default=1000, ge=10)
    """Pushes kept in memory while MongoDB refuses outbox writes (retried with backoff); beyond it the oldest
    progress push is dropped first."""
    tracker_timeout_seconds: float = 30.0
    """Timeout of a Kotlin tracker call."""
    health_cache_seconds: float = 5.0
    """How long `/health` and `/health/ready` reuse a dependency check."""
    stream_buffer_events: int = 2000
    """Events kept per thread for SSE replay (`Last-Event-ID`)."""
    stream_buffer_bytes: int = Field(default=1 << 20, ge=4096)
    """Bytes of events kept per thread for SSE replay (as sent, 1 MiB); the oldest go first, and a reconnecting
    client that missed them gets a `gap` event."""
    stream_hub_bytes: int = Field(default=64 << 20, ge=4096)
    """Bytes of events kept for all threads together (64 MiB); past it the oldest events of any thread go first."""
    stream_hub_threads: int = Field(default=500, ge=1)
    """Threads whose event logs are kept for replay (500); past it the least recently active idle thread's log goes
    (a client of a forgotten thread is told `gap` and reads `/status`)."""
    stream_event_bytes: int = Field(default=64 << 10, ge=1024)
    """Largest single SSE event (64 KiB): a bigger one has its long texts cut (`"truncated": true`) instead of
    pushing everything else out."""

    max_body_bytes: int = Field(default=4 << 20, ge=1024)
    """Largest request body (4 MiB) on every route but the bulk ones; larger gets 413 before it is read. Far above
    what Kotlin sends to `/orchestrate/stream` (a query, at most 20 chat messages and 15 summary blocks, the
    environment) and well inside the 16 MiB MongoDB document a run's checkpoint must fit in."""
    max_bulk_body_bytes: int = Field(default=16 << 20, ge=1024)
    """Largest body (16 MiB) of `/correction/*` (a whole meeting's transcript segments, about 150 KB per hour of
    speech) and `/internal/compress-chat` (a chat's unsummarised messages)."""
    max_json_depth: int = Field(default=32, ge=2)
    """Deepest nesting of objects and arrays in a request body; deeper gets 422 before validation (Kotlin's bodies
    nest 6 levels at most, `environment.components[].ports[]`; MongoDB refuses documents deeper than 100)."""
    max_text_chars: int = Field(default=1_000_000, ge=1)
    """Longest free text in a request (`query`, an approval's `modification` and `reason`, a correction
    `instruction`); longer gets 422. A query may be a whole log for the cloud model (about 250 000 tokens fit)."""

    api_token: SecretStr | None = None
    """When set, every endpoint requires `Authorization: Bearer <token>` (`/stream` included); only the probes
    `/health/live` and `/health/ready`, and a minimal `/health`, answer without it. Off by default: the Kotlin
    server sends no token. For deployments reachable beyond the NetworkPolicy; the terminal client sends
    `JERVIS_API_TOKEN`."""

    allow_no_token: bool = False
    """Start listening beyond loopback without `API_TOKEN` all the same (anyone who reaches the port can then run
    code on the workspaces): only where something else keeps strangers out, e.g. the cluster's NetworkPolicy for
    the Kotlin server, which sends no token. Said as a warning in the log at start and in `/health`."""
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Host names (the `Host` header, any port) the service answers besides `localhost`, `127.0.0.1`, `[::1]` and
    its own listen address; any other gets 400, so a web page cannot reach a loopback service through a name it
    controls (DNS rebinding). Comma-separated or a JSON list; `*.example.org` for its subdomains, `*` for every
    name. Empty on a listen beyond
    loopback with `API_TOKEN`: every name (the pod's IP for the probes, its Service name, an ingress's host), the
    token guards it; without a token (`ALLOW_NO_TOKEN`) the loopback names only."""
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Proxies (addresses or CIDR ranges, comma-separated or a JSON list) whose `X-Forwarded-For` /
    `X-Forwarded-Proto` the service believes, e.g. the ingress controller's pods: the client's address (the
    sign-in throttle, the logs) and scheme (the console cookie's `Secure`) come from them. Empty: none, the peer
    is the client. Never `*` (any local agent could then claim any address). Replaces uvicorn's
    `FORWARDED_ALLOW_IPS`, which is ignored."""

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Level of the service's log (libraries' chatter stays at WARNING)."""
    log_format: Literal["json", "text"] = "json"
    """`json`: one object per line with `thread_id` / `task_id` (production); `text` for a terminal."""

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("kotlin_server_url", "knowledgebase_url", "ollama_url", "knowledgebase_write_url")
    @classmethod
    def _strip_slash(cls, value: str | None) -> str | None:
        return value.rstrip("/") if value else value

    @field_validator("allowed_hosts", "trusted_proxies", mode="before")
    @classmethod
    def _name_list(cls, value: object) -> object:
        """A comma-separated string (as uvicorn's `FORWARDED_ALLOW_IPS` was) or a JSON list."""
        if isinstance(value, str):
            text = value.strip()
            return json.loads(text) if text.startswith("[") else [part.strip() for part in text.split(",")
                                                                  if part.strip()]
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _named_proxies_only(cls, value: list[str]) -> list[str]:
        if "*" in value:
            raise ValueError("TRUSTED_PROXIES must name the proxies: '*' would let any peer claim any address")
        for proxy in value:
            ipaddress.ip_network(proxy, strict=False)  # ValueError names the bad entry
        return value

    @model_validator(mode="after")
    def _lease_outlasts_a_push(self) -> Settings:
        if self.outbox_lease_seconds <= self.push_timeout_seconds:
            raise ValueError("outbox_lease_seconds must exceed push_timeout_seconds (a lease must outlast a send)")
        return self

    @property
    def kb_write_url(self) -> str:
        return self.knowledgebase_write_url or self.knowledgebase_url
