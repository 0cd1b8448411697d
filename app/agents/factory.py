"""AGENT_RUNNER name → runner (metered, whichever it is), and what runs each agent type."""

from __future__ import annotations

from collections.abc import Callable

from app.agents.base import AgentRunner
from app.agents.metered import MeteredRunner
from app.agents.relay import AgentRelay
from app.agents.workspace import WorkspaceManager
from app.config import Settings
from app.observability.metrics import Metrics
from app.observability.redaction import no_redaction


def create_runner(settings: Settings, workspaces: WorkspaceManager, metrics: Metrics, *,
                  redact: Callable[[str], str] = no_redaction, relay: AgentRelay | None = None) -> AgentRunner:
    """`relay`: what the local runner's sandboxed steps reach their model through (the service's)."""
    return MeteredRunner(_create(settings, workspaces, metrics, relay), metrics, redact=redact)


def describe_agents(settings: Settings) -> dict[str, str]:
    """Agent type → what runs its steps (`/health` and the start-up log): the image of its Job, or
    the local program (by default the local Aider on the local LLM)."""
    if settings.agent_runner == "kubernetes":
        from app.agents.job_spec import agent_image

        return {agent_type: f"Job of {agent_image(settings, agent_type)}" for agent_type in settings.agent_concurrency}
    from app.agents.local_agents import LocalAgents

    return LocalAgents(settings).describe()


def _create(settings: Settings, workspaces: WorkspaceManager, metrics: Metrics,
            relay: AgentRelay | None) -> AgentRunner:
    if settings.agent_runner == "kubernetes":
        from app.agents.k8s_client import KubernetesApi, load_api_client
        from app.agents.kubernetes import KubernetesJobRunner

        api = KubernetesApi(load_api_client(settings.kubeconfig), settings.agent_namespace,
                            request_timeout=settings.k8s_request_timeout_seconds)
        return KubernetesJobRunner(api, workspaces, settings, metrics=metrics)
    from app.agents.local import LocalRunner

    return LocalRunner(workspaces, settings, metrics=metrics, relay=relay)
