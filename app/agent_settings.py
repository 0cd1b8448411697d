"""The agent settings of `Settings` (runners, images, the local agents, their sandbox): a part of
the service's settings kept in their own module, read from the environment like the rest."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

AgentName = Literal["aider", "openhands", "claude", "junie"]

#: Complexity → agent, from the "Agent Selection Strategy" table at the top of the spec.
DEFAULT_AGENT_SELECTION: dict[str, AgentName] = {"simple": "aider", "medium": "openhands", "complex": "openhands",
                                                  "critical": "claude"}

#: Variables only the service itself may read: never passed to an agent, whatever is configured.
SERVICE_ONLY_VARIABLES = frozenset({"MONGODB_URL", "API_TOKEN"})


class AgentSettings(BaseSettings):
    """How agents run: on which runner, from which images, which local program per type."""

    model_config = SettingsConfigDict(extra="ignore", env_ignore_empty=True, use_attribute_docstrings=True)

    k8s_namespace: str = "jervis"
    """Namespace of the agent Jobs."""
    data_root: Path = Path("/opt/jervis/data")
    """Shared volume holding the workspaces (`.data/workspaces` with `scripts/run.sh`); mounted into every agent Job."""
    container_registry: str = "localhost:5000/jervis"
    """Registry of the agent images."""
    agent_runner: Literal["local", "kubernetes"] = "local"
    """`local`: the agent entrypoint as a subprocess; `kubernetes`: one Job per step."""
    local_agents: dict[AgentName, AgentName] = Field(default_factory=lambda: dict[AgentName, AgentName]({
        "aider": "aider", "openhands": "aider", "claude": "aider", "junie": "aider",
    }))
    """Local runner: the program that runs steps planned for each type (JSON). `aider`, `openhands` (its SDK) and
    `claude` (Claude Code) are installed into `.cache/agents/` on first use and work with the local LLM (Claude Code
    through the service's `/v1/messages` unless `ANTHROPIC_API_KEY` is set); `junie` must be on PATH with its own
    key. By default every type runs Aider: on the embedded 1.5B model OpenHands and Claude Code made no correct
    change where Aider did. A program that cannot be installed gives way to Aider, said in the run."""
    local_agent_command: list[str] = Field(default_factory=list)
    """Local runner: one command (argv, JSON list) that replaces the agent of every type, e.g. the tests'
    deterministic agent. Empty = `LOCAL_AGENTS`."""
    aider_venv: str = ".cache/agents/aider-venv"
    """Local runner: Aider's own virtualenv (relative paths are under the project directory); installed there on
    first use unless it already holds the pinned version."""
    aider_args: list[str] = Field(default_factory=lambda: ["--edit-format", "whole", "--map-tokens", "0"])
    """Extra Aider flags for both runners (JSON list): whole-file edits and no repository map keep a small local
    model reliable (the diff formats fail often with a 1.5B model); a large model may prefer `--edit-format diff`."""
    openhands_venv: str = ".cache/agents/openhands-venv"
    """Local runner: the OpenHands SDK's own virtualenv (relative paths are under the project directory); installed
    there on first use, with a Python of 3.12 or later, unless it already holds the pinned version."""
    openhands_python: str | None = None
    """Local runner: the Python (3.12 or later) that OpenHands' virtualenv is made with. Unset: the first that runs
    of `python3.12` / `python3.13` on PATH and pyenv's installed versions."""
    claude_code_dir: str = ".cache/agents/claude-code"
    """Local runner: where Claude Code is installed from npm (its own prefix; relative paths are under the project
    directory) on first use, unless it already holds the pinned version. Needs Node.js 18 or later and npm."""
    claude_local_max_output_tokens: int = Field(default=4096, ge=256)
    """Local runner, Claude Code without `ANTHROPIC_API_KEY`: the most tokens one answer of the local model may
    have on the service's `/v1/messages` (Claude Code asks for 32,000: half an hour of a small model looping)."""
    agent_images: dict[str, str] = Field(default_factory=lambda: {
        "aider": "jervis-aider", "openhands": "jervis-coding-engine", "claude": "jervis-claude",
        "junie": "jervis-junie",
    })
    """Image name per agent: `{CONTAINER_REGISTRY}/{name}:{AGENT_IMAGE_TAG}` (JSON)."""
    agent_image_tag: str = "latest"
    """Tag of the agent images."""
    agent_concurrency: dict[str, int] = Field(default_factory=lambda: {
        "aider": 3, "openhands": 2, "claude": 2, "junie": 1,
    })
    """Running agents per type (per pod, and counted among the cluster's Jobs) (JSON)."""
    agent_models: dict[str, str] = Field(default_factory=lambda: {
        "aider": "ollama_chat/qwen3-coder-tool:30b", "openhands": "ollama/qwen3-coder-tool:30b",
        "claude": "claude-sonnet-4-5", "junie": "",
    })
    """`AGENT_MODEL` handed to each agent (JSON)."""
    git_agent: str = "claude"
    """The agent image whose Job runs git (commit / push) after the user's approval."""
    kubeconfig: str | None = None
    """Kubeconfig file; unset = in-cluster configuration inside a pod, else `~/.kube/config`."""
    pvc_claim_name: str = "jervis-data-pvc"
    """PersistentVolumeClaim mounted at `DATA_ROOT` in agent Jobs."""
    agent_secret_name: str = "jervis-agent-secrets"
    """Secret whose keys agent Jobs receive by reference (never copied into the Job)."""
    agent_secret_keys: list[str] = Field(default_factory=lambda: [
        "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "JUNIE_API_KEY", "GIT_TOKEN",
    ])
    """Keys of `AGENT_SECRET_NAME` exposed to agents as env vars of the same name (optional refs); their values are
    also redacted from logs when this process has them (JSON). The local runner passes the same names from its own
    environment (none to test runs, like the Jobs)."""
    agent_env_passthrough: list[str] = Field(default_factory=list)
    """Local runner: further variables passed from the service's environment to agents (JSON list, e.g.
    `["HF_HOME"]`). Agents otherwise get only an allow-list: basic process variables (PATH, HOME, locale, proxies,
    CA bundles), their job's variables and `AGENT_SECRET_KEYS`; never `MONGODB_URL` or `API_TOKEN`."""
    agent_sandbox: Literal["auto", "bwrap", "off"] = "auto"
    """Local runner: how agents and test runs are confined. `auto`: in a bubblewrap sandbox when `bwrap` works here
    (the workspace writable, the rest read-only; HOME, DATA_ROOT and `AGENT_SANDBOX_HIDE` hidden; a network of its
    own that reaches only the step's model and, for the agents that use it, the KB, through the service's relay);
    without one, agents that can run commands (all but Aider) and test runs are refused. `bwrap`: the sandbox is
    required, Aider included. `off`: agents run unconfined as the service's user. Git steps (commit, push) are never
    confined."""
    agent_sandbox_hide: list[str] = Field(default_factory=lambda: [".data", ".env"])
    """Local runner: paths hidden from sandboxed agents besides HOME and DATA_ROOT (JSON list; relative paths are
    under the project directory): by default the development data (embedded MongoDB, model server, workspaces)
    and the project's `.env`."""
    agent_sandbox_writable: list[str] = Field(default_factory=list)
    """Local runner: further paths sandboxed agents may write, bound as they are (JSON list; relative paths are under
    the project directory), e.g. a build cache such as `~/.m2` that test runs should share instead of starting empty.
    What is written there outlives the step and is seen by every client's agents."""
    agent_sandbox_tmpfs_mb: int = Field(default=1024, ge=16)
    """Local runner: the size (MiB) of each tmpfs of a sandbox: its private `/tmp` and the empty ones that hide
    HOME, DATA_ROOT and `/run` (writable, in memory): an agent that fills one gets "no space left" instead of
    taking the machine's memory."""
    agent_service_account: str | None = None
    """Service account of agent Jobs (none = the namespace default)."""
    job_ttl_seconds: int = 300
    """`ttlSecondsAfterFinished` of agent Jobs."""
    agent_cpu_request: str = "250m"
    """CPU request of an agent pod."""
    agent_memory_request: str = "256Mi"
    """Memory request of an agent pod."""
    agent_cpu_limit: str = "1000m"
    """CPU limit of an agent pod."""
    agent_memory_limit: str = "1Gi"
    """Memory limit of an agent pod."""
    k8s_request_timeout_seconds: float = 30.0
    """Timeout of one Kubernetes API call."""
    k8s_poll_seconds: float = 2.0
    """How often a waiting runner re-checks a Job and its pod (a watch wakes it sooner)."""
    k8s_capacity_wait_seconds: float = Field(default=3600.0, gt=0)
    """How long a step waits for a free agent slot (`AGENT_CONCURRENCY` of its type running in this pod or as Jobs
    in the namespace) before the attempt fails. Keep it above the longest `AGENT_TIMEOUTS` entry: a slot frees when
    a running agent ends."""
    k8s_start_timeout_seconds: float = Field(default=300.0, gt=0)
    """An agent Job whose pod has not started its container within this long (unschedulable, a slow image pull, a
    quota refusing the pod) is deleted and the attempt fails. Also the allowance beyond the agent's timeout before
    the runner stops waiting for a Job the cluster never finishes."""
    k8s_delete_timeout_seconds: float = Field(default=90.0, gt=0)
    """How long a deleted agent Job may take to disappear (its pod's termination grace, with room) before the
    attempt fails instead of starting beside it."""
    agent_timeouts: dict[str, int] = Field(
        default_factory=lambda: {"aider": 600, "openhands": 1800, "claude": 1800, "junie": 1200}
    )
    """Seconds per agent step (`activeDeadlineSeconds` of its Job) (JSON)."""
    agent_stall_seconds: float = Field(default=600.0, ge=0)
    """An agent step with no output and no change in its workspace for this long is stopped as failed (0: off)."""
    agent_selection: dict[str, AgentName] = Field(default_factory=lambda: dict(DEFAULT_AGENT_SELECTION))
    """Step complexity → agent (JSON; every complexity required)."""

    @field_validator("agent_secret_keys", "agent_env_passthrough")
    @classmethod
    def _no_service_secrets(cls, value: list[str]) -> list[str]:
        leaked = sorted(set(value) & SERVICE_ONLY_VARIABLES)
        if leaked:
            raise ValueError(f"{', '.join(leaked)} belong to the service and are never given to agents")
        return value

    @field_validator("agent_selection")
    @classmethod
    def _complete_selection(cls, value: dict[str, AgentName]) -> dict[str, AgentName]:
        missing = set(DEFAULT_AGENT_SELECTION) - set(value)
        if missing:
            raise ValueError(f"agent_selection lacks complexities: {sorted(missing)}")
        return value
