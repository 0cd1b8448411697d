"""What an agent's environment may hold: an allow-list, shared by both runners.

An agent runs code a model wrote on a repository someone else owns; it must not see the service's
database URL, its API token or provider keys it was not meant to have. A Kubernetes Job gets only
what its spec names (`job_spec`); the local runner, whose subprocess would otherwise inherit the
whole service environment, builds the same from the service's environment by name: the basic
process variables a program needs to run, the job's own variables, the agent secrets of
`AGENT_SECRET_KEYS` (none for test runs, as for the Jobs) and the names of `AGENT_ENV_PASSTHROUGH`.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.agent_settings import SERVICE_ONLY_VARIABLES
from app.agents.base import AgentJob
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


def agent_secret_keys(settings: Settings, job: AgentJob) -> list[str]:
    """The agent secrets a job receives: `AGENT_SECRET_KEYS`, except for test runs (the project's
    tests need no credentials). The Job spec and the local runner both ask here."""
    return [] if job.mode == "test" else list(settings.agent_secret_keys)


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
    win: basic variables, pass-through names, agent secrets, the job's variables, then what the
    local agent resolution set (model base URL, Aider's PATH)."""
    names = set(BASE_VARIABLES) | set(settings.agent_env_passthrough) | set(agent_secret_keys(settings, job))
    if job.allow_git:
        names |= GIT_VARIABLES
    env = {name: value for name, value in environ.items()
           if (name in names or name.startswith(BASE_PREFIXES)) and name not in SERVICE_ONLY_VARIABLES}
    env.update(job_variables(settings, job))
    env.update(agent_env)
    return env
