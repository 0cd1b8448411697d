"""What an agent's environment may hold: an allow-list, and one decision of which secrets a step
gets, shared by both runners.

An agent runs code a model wrote on a repository someone else owns; it must not see the service's
database URL, its API token, its configuration, or a credential its step does not use (a coding
agent holding `GIT_TOKEN` could push without the user's approval). A Kubernetes Job gets only what
its spec names (`job_spec`); the local runner, whose subprocess would otherwise inherit the whole
service environment, builds the same from the service's environment by name: the basic process
variables a program needs to run, the job's own variables, the secrets its route needs
(`agent_secret_keys`) and the names of `AGENT_ENV_PASSTHROUGH`; never a variable the service's
settings read (`service_variables`), whatever is configured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.agent_settings import SECRET_VARIABLES, service_variables
from app.agents.base import AgentJob
from app.agents.programs.claude import ClaudeCodeProgram
from app.config import Settings

#: What Aider, git, node and Python need to start and reach the network: the search path, the
#: user and home, locale and time zone, temporary and cache directories, proxies and CA bundles,
#: git's identity, the loader path of a Python built outside the system prefix.
BASE_VARIABLES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM",
    "TMPDIR", "TMP", "TEMP", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
    "LD_LIBRARY_PATH", "LITELLM_LOCAL_MODEL_COST_MAP",
})
BASE_PREFIXES = ("LC_",)
#: Only the entrypoint's git mode (commit, push) may use the developer's SSH agent.
GIT_VARIABLES = frozenset({"SSH_AUTH_SOCK"})
#: The only secret of the git step (commit, push): it runs no model.
GIT_SECRETS = frozenset({"GIT_TOKEN"})
#: litellm prefixes of models served locally: no provider key.
LOCAL_PROVIDERS = frozenset({"ollama", "ollama_chat", "hosted_vllm", "lm_studio", "llamafile"})
#: Model names without a prefix that litellm sends to a cloud provider.
BARE_MODEL_PROVIDERS = (("claude", "anthropic"), ("gpt-", "openai"), ("o1", "openai"), ("o3", "openai"),
                        ("o4", "openai"), ("gemini", "gemini"))
#: A provider's key names where they are not `<PROVIDER>_API_KEY`.
PROVIDER_KEYS = {"gemini": frozenset({"GEMINI_API_KEY", "GOOGLE_API_KEY"})}


@dataclass(frozen=True)
class AgentRoute:
    """What runs a step and whom it talks to: decides the one key it may need."""

    program: str
    """`aider`, `openhands`, `claude`, `junie`, or another program."""
    provider: str | None
    """The cloud provider it talks to with the service's key (`anthropic`, `openai`, ...); None: a
    local model (Ollama, the embedded model, the service's `/v1/messages`) or one nobody can tell."""


def provider_of(model: str) -> str | None:
    """The cloud provider a litellm model string names (`openai/gpt-4o`, `claude-sonnet-4-5`); None
    for a local model (`ollama_chat/...`) and a name that says nothing (no key is guessed)."""
    prefix, slash, _ = model.strip().partition("/")
    if slash:
        return None if prefix.lower() in LOCAL_PROVIDERS else prefix.lower()
    return next((provider for start, provider in BARE_MODEL_PROVIDERS if model.lower().startswith(start)), None)


def provider_keys(provider: str) -> frozenset[str]:
    return PROVIDER_KEYS.get(provider, frozenset({f"{provider.upper()}_API_KEY"}))


def job_route(settings: Settings, job: AgentJob) -> AgentRoute:
    """A Job's route: the type's image on `AGENT_MODELS[type]`; Claude Code always on Anthropic."""
    if job.agent_type == "claude":
        return AgentRoute("claude", "anthropic")
    return AgentRoute(job.agent_type, provider_of(settings.agent_models.get(job.agent_type, "")))


def local_route(settings: Settings, job: AgentJob, agent_env: Mapping[str, str]) -> AgentRoute:
    """The local runner's route, from the variables of the program it resolved (`agent_env`):
    `LOCAL_AGENT_COMMAND` stands in for the type's agent on its `AGENT_MODELS` model (as a Job);
    the local Aider and OpenHands run the local model only; Claude Code is on Anthropic unless it
    was given its own key for the service's `/v1/messages`; a program from PATH by its model."""
    if settings.local_agent_command:
        return job_route(settings, job)
    program = agent_env.get("AGENT_TYPE", job.agent_type)
    if program in ("aider", "openhands"):
        return AgentRoute(program, None)
    if program == "claude":
        return AgentRoute(program, None if "ANTHROPIC_API_KEY" in agent_env else "anthropic")
    return AgentRoute(program, provider_of(agent_env.get("AGENT_MODEL", settings.agent_models.get(program, ""))))


def route_secrets(route: AgentRoute, job: AgentJob) -> frozenset[str]:
    """The secrets an agent step's route needs. Junie its own key. Claude Code, the cloud agent
    whose use each run decides (app/graph/rules/agent_selection.py), Anthropic's key only where the
    run allows Anthropic (`AgentJob.cloud_providers`). Aider and OpenHands, whose models the operator
    chose for every run (`AGENT_MODELS`), the key of their model's provider, none on a local model."""
    if route.program == "junie":
        return frozenset({"JUNIE_API_KEY"})
    if route.provider is None or (route.program == "claude" and route.provider not in job.cloud_providers):
        return frozenset()
    return provider_keys(route.provider)


def agent_secret_keys(settings: Settings, job: AgentJob, route: AgentRoute | None = None) -> list[str]:
    """The secrets a job receives, in `AGENT_SECRET_KEYS` order (the operator's list of what may be
    handed out at all): `GIT_TOKEN` to the git step alone, none to a test run (the project's tests
    need no credentials), and to an agent step what its route needs (`route_secrets`; a Job's route
    unless the local runner names its own). The Job spec and the local runner both ask here."""
    if job.allow_git:
        wanted = GIT_SECRETS
    elif job.entrypoint_mode == "agent":
        wanted = route_secrets(route or job_route(settings, job), job)
    else:
        wanted = frozenset()
    return [key for key in settings.agent_secret_keys if key in wanted]


def job_variables(settings: Settings, job: AgentJob) -> dict[str, str]:
    """The step's identity and services, as the entrypoint contract names them."""
    return {
        "TASK_ID": job.task_id,
        "CLIENT_ID": job.client_id,
        "PROJECT_ID": job.project_id or "",
        "WORKSPACE_PATH": str(job.workspace),
        "OLLAMA_URL": settings.ollama_url,
        "KNOWLEDGEBASE_URL": settings.knowledgebase_url,
        "KNOWLEDGEBASE_WRITE_URL": settings.kb_write_url,
        "AGENT_TYPE": job.agent_type,
        "ALLOW_GIT": "true" if job.allow_git else "false",
        "JERVIS_MODE": job.entrypoint_mode,
        "JERVIS_ATTEMPT": str(job.attempt),
    }


def local_agent_env(environ: Mapping[str, str], settings: Settings, job: AgentJob,
                    agent_env: Mapping[str, str]) -> dict[str, str]:
    """The local agent's environment, from the service's `environ` by name only. Later sources
    win: basic variables, pass-through names, the secrets of the step's route, the job's variables,
    then what the local agent resolution set (model base URL, Aider's PATH). Nothing the service's
    settings read, and no secret but the route's, whatever the names configured."""
    route = local_route(settings, job, agent_env)
    if (job.entrypoint_mode == "agent" and not settings.local_agent_command and route.program == "claude"
            and route.provider is not None and route.provider not in job.cloud_providers):
        # Claude Code has a key but this run does not allow Anthropic: the local model, as without one.
        agent_env = {**agent_env, **ClaudeCodeProgram(settings, environ=environ).local_route()}
        route = AgentRoute("claude", None)
    secrets = set(agent_secret_keys(settings, job, route))
    secret_names = {name.upper() for name in SECRET_VARIABLES | set(settings.agent_secret_keys)}
    service = service_variables(type(settings))
    names = set(BASE_VARIABLES) | set(settings.agent_env_passthrough) | secrets
    if job.allow_git:
        names |= GIT_VARIABLES
    env = {name: value for name, value in environ.items()
           if (name in names or name.startswith(BASE_PREFIXES)) and name.upper() not in service
           and (name in secrets or name.upper() not in secret_names)}
    env.update(job_variables(settings, job))
    env.update(agent_env)
    return env
