"""The agent settings of `Settings` (runners, images, the local agents, their sandbox): a part of
the service's settings kept in their own module, read from the environment like the rest."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, AliasPath, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

AgentName = Literal["aider", "openhands", "claude", "junie"]

#: Complexity → agent, from the "Agent Selection Strategy" table at the top of the spec.
DEFAULT_AGENT_SELECTION: dict[str, AgentName] = {"simple": "aider", "medium": "openhands", "complex": "openhands",
                                                  "critical": "claude"}

#: Variables only the service itself may read besides those its settings read (`service_variables`):
#: never passed to an agent, whatever is configured. The terminal client's token.
SERVICE_ONLY_VARIABLES = frozenset({"JERVIS_API_TOKEN"})
#: Secrets an agent receives only as `AGENT_SECRET_KEYS` hands them, to the step whose route needs one
#: (app/agents/agent_env.py `agent_secret_keys`), never by pass-through.
SECRET_VARIABLES = frozenset({"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY",
                              "JUNIE_API_KEY", "GIT_TOKEN"})
#: Variables of the settings an agent is handed all the same (agent-images/CONTRACT.md): the service
#: URLs of the contract, whose values the runner sets (`job_variables`), never picked from the
#: service's environment, and the provider keys of `SECRET_VARIABLES`.
AGENT_CONTRACT_VARIABLES = frozenset({"OLLAMA_URL", "KNOWLEDGEBASE_URL", "KNOWLEDGEBASE_WRITE_URL"}) | SECRET_VARIABLES


def settings_variables(model: type[BaseSettings]) -> frozenset[str]:
    """Every environment name a settings class reads, upper-case (pydantic-settings matches them
    case-insensitively): its fields' names with the class's prefix, or their aliases."""
    prefix = str(model.model_config.get("env_prefix") or "")
    names: set[str] = set()
    for name, field in model.model_fields.items():
        aliases = field.validation_alias or field.alias
        if isinstance(aliases, AliasChoices):
            names.update(choice for choice in aliases.choices if isinstance(choice, str))
        elif isinstance(aliases, str):
            names.add(aliases)
        elif not isinstance(aliases, AliasPath):
            names.add(prefix + name)
    return frozenset(name.upper() for name in names)


def service_variables(model: type[BaseSettings]) -> frozenset[str]:
    """What belongs to the service and never reaches an agent: every variable its settings read
    (the database URL, `API_TOKEN`, Kotlin's URL, ...) and `SERVICE_ONLY_VARIABLES`, except
    `AGENT_CONTRACT_VARIABLES`. Derived from the settings, so a new setting is the service's too."""
    return (settings_variables(model) | SERVICE_ONLY_VARIABLES) - AGENT_CONTRACT_VARIABLES


class AgentSettings(BaseSettings):
    """How agents run: on which runner, from which images, which local program per type."""

    model_config = SettingsConfigDict(extra="ignore", env_ignore_empty=True, use_attribute_docstrings=True)

    k8s_namespace: str = "jervis"
    """The orchestrator's own namespace. It was also the agent Jobs' namespace before `AGENT_NAMESPACE`: a
    deployment that sets `K8S_NAMESPACE` but not `AGENT_NAMESPACE` keeps its Jobs there (without the agents'
    namespace's Pod Security, NetworkPolicy and admission policy: docs/deployment.md)."""
    agent_namespace: str = "jervis-agents"
    """Namespace of the agent Jobs (`k8s/agents-namespace.yaml`): Pod Security `restricted` enforced, egress only
    to DNS, the model and the KB, the orchestrator may create Jobs there and nowhere else. Unset while
    `K8S_NAMESPACE` is set: `K8S_NAMESPACE`, as before this setting existed."""
    data_root: Path = Path("/opt/jervis/data")
    """Shared volume holding the workspaces (`.data/workspaces` with `scripts/run.sh`); an agent Job mounts only its
    own workspace of it (`subPath`), at the same path."""
    container_registry: str = "localhost:5000/jervis"
    """Registry of the agent images."""
    agent_runner: Literal["local", "kubernetes"] = "local"
    """`local`: the agent entrypoint as a subprocess; `kubernetes`: one Job per step."""
    local_agents: dict[AgentName, AgentName] = Field(default_factory=lambda: dict[AgentName, AgentName]({
        "aider": "aider", "openhands": "aider", "claude": "aider", "junie": "aider",
    }))
    """Local runner: the program that runs steps planned for each type (JSON). `aider`, `openhands` (its SDK) and
    `claude` (Claude Code) are installed into `.cache/agents/` on first use and work with the local LLM (Claude Code
    through the service's `/v1/messages` unless `ANTHROPIC_API_KEY` is set and the run allows Anthropic); `junie`
    must be on PATH with its own key. By default every type runs Aider: on the embedded 1.5B model OpenHands and
    Claude Code made no correct change where Aider did. A program that cannot be installed gives way to Aider, said
    in the run."""
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
    """Local runner, Claude Code on the local route (no `ANTHROPIC_API_KEY`, or a run not allowing Anthropic): the
    most tokens one answer of the local model may have on the service's `/v1/messages` (Claude Code asks for 32,000:
    half an hour of a small model looping)."""
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
    """PersistentVolumeClaim of the data volume (`DATA_ROOT`), of that name in the orchestrator's and in the agents'
    namespace (the same filesystem); a Job mounts its workspace of it."""
    agent_secret_name: str = "jervis-agent-secrets"
    """Secret whose keys agent Jobs receive by reference (never copied into the Job)."""
    agent_secret_keys: list[str] = Field(default_factory=lambda: [
        "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "JUNIE_API_KEY", "GIT_TOKEN",
    ])
    """The secrets that may be handed to agents at all (JSON): keys of `AGENT_SECRET_NAME` that a Job references
    (optional refs, never copied into it), names the local runner takes from its own environment; their values are
    also redacted from logs when this process has them. Each step gets only those of this list its route needs:
    `GIT_TOKEN` the git step alone (commit, push; the git Job), never an agent or a test run; `JUNIE_API_KEY` Junie;
    `ANTHROPIC_API_KEY` Claude Code where it runs on Anthropic and the run allows Anthropic (the project's
    `auto_use_anthropic`, a request for the cloud, an approved escalation), else the local runner's Claude Code takes
    the service's `/v1/messages` with a key derived from `API_TOKEN`; Aider and OpenHands on a local model (Ollama,
    the embedded model) no key at all, on a cloud model (`AGENT_MODELS` naming `anthropic/`, `openai/`, `gemini/`,
    ...) that provider's key only; test runs none. A variable of the service's own settings is refused here."""
    agent_env_passthrough: list[str] = Field(default_factory=list)
    """Local runner: further variables passed from the service's environment to agents (JSON list, e.g.
    `["HF_HOME"]`). Agents otherwise get only an allow-list: basic process variables (PATH, HOME, locale, proxies,
    CA bundles), their job's variables and the secrets of `AGENT_SECRET_KEYS` their route needs. Refused: any
    variable the service's settings read (`MONGODB_URL`, `API_TOKEN`, `KOTLIN_SERVER_URL`, ...) and any secret name,
    which only `AGENT_SECRET_KEYS` hands out."""
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
    agent_scratch_size_limit: str = "1Gi"
    """`sizeLimit` of each writable `emptyDir` of an agent pod (its HOME and `/tmp`; the root filesystem is
    read-only and the data volume shows only the step's workspace)."""
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

    @model_validator(mode="after")
    def _no_service_secrets(self) -> AgentSettings:
        """Checked against the settings class being built (`Settings` with every part), so every
        variable the service reads is covered, in whatever case it is written."""
        service = service_variables(type(self))
        for names in (self.agent_secret_keys, self.agent_env_passthrough):
            leaked = sorted(name for name in names if name.upper() in service)
            if leaked:
                raise ValueError(f"{', '.join(leaked)} belong to the service and are never given to agents")
        secrets = {name.upper() for name in self.agent_secret_keys} | SECRET_VARIABLES
        passed = sorted(name for name in self.agent_env_passthrough if name.upper() in secrets)
        if passed:
            raise ValueError(f"{', '.join(passed)}: secrets reach agents only through AGENT_SECRET_KEYS, to the "
                             "step whose route needs them, never by AGENT_ENV_PASSTHROUGH")
        return self

    @model_validator(mode="after")
    def _jobs_stay_where_an_older_deployment_put_them(self) -> AgentSettings:
        """A deployment written before `AGENT_NAMESPACE` names only `K8S_NAMESPACE`, where its Role lets the
        orchestrator create Jobs: its Jobs stay there rather than fail in a namespace it never made."""
        if "agent_namespace" not in self.model_fields_set and "k8s_namespace" in self.model_fields_set:
            self.agent_namespace = self.k8s_namespace
        return self

    @field_validator("agent_selection")
    @classmethod
    def _complete_selection(cls, value: dict[str, AgentName]) -> dict[str, AgentName]:
        missing = set(DEFAULT_AGENT_SELECTION) - set(value)
        if missing:
            raise ValueError(f"agent_selection lacks complexities: {sorted(missing)}")
        return value
