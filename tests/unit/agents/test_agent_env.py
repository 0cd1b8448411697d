"""The agents' environment allow-list (app/agents/agent_env.py), shared by both runners."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes.client import ApiClient
from pydantic import ValidationError

from app.agents.agent_env import local_agent_env
from app.agents.base import AgentJob
from app.agents.job_spec import build_job
from app.config import Settings

SERVICE_ENVIRON = {
    "PATH": "/usr/bin", "HOME": "/home/jervis", "LC_CTYPE": "C.UTF-8", "SSH_AUTH_SOCK": "/tmp/agent.sock",
    "MONGODB_URL": "mongodb://u:p@db", "API_TOKEN": "service-token", "OPENAI_API_KEY": "sk-openai",
    "GIT_TOKEN": "ghp-token", "GEMINI_API_KEY": "unrelated-provider", "PYTHONPATH": "/srv/app",
}


def job(mode: str = "agent") -> AgentJob:
    return AgentJob(thread_id="thread-t1-abcd", task_id="t1", client_id="c1", agent_type="aider",
                    workspace=Path("/data/ws"), mode=mode)  # type: ignore[arg-type]


@pytest.mark.parametrize(("mode", "expected"), [
    ("agent", set()),  # the local Aider on the local model: no provider key, no GIT_TOKEN (was both: issue 40)
    ("push", {"GIT_TOKEN", "SSH_AUTH_SOCK"}),  # the git step: its token, no provider key (was OPENAI_API_KEY too)
    ("test", set()),
])
def test_the_local_environment_holds_the_agent_secrets_of_the_mode_and_nothing_of_the_service(
        mode: str, expected: set[str]) -> None:
    env = local_agent_env(SERVICE_ENVIRON, Settings(agent_secret_keys=["OPENAI_API_KEY", "GIT_TOKEN"]), job(mode), {})
    picked = set(env) & set(SERVICE_ENVIRON)
    assert picked == {"PATH", "HOME", "LC_CTYPE"} | expected
    assert env["JERVIS_MODE"] == {"push": "git"}.get(mode, mode) and env["TASK_ID"] == "t1"


def test_the_local_agents_own_variables_win_over_the_service_environment() -> None:
    own = {"PATH": "/aider/bin:/usr/bin", "OPENAI_API_KEY": "local"}
    env = local_agent_env(SERVICE_ENVIRON, Settings(), job(), own)
    assert env["PATH"] == "/aider/bin:/usr/bin" and env["OPENAI_API_KEY"] == "local"


@pytest.mark.parametrize("setting", ["agent_secret_keys", "agent_env_passthrough"])
def test_settings_refuse_to_hand_the_services_own_secrets_to_agents(setting: str) -> None:
    with pytest.raises(ValidationError, match="MONGODB_URL belong to the service"):
        Settings(**{setting: ["HF_HOME", "MONGODB_URL"]})


def test_a_job_names_no_service_secret_and_mounts_no_service_account_token() -> None:
    cloud = job().model_copy(update={"agent_type": "claude", "cloud_providers": ["anthropic"]})
    body = ApiClient().sanitize_for_serialization(build_job(Settings(data_root=Path("/data")), cloud))
    pod = body["spec"]["template"]["spec"]
    names = {e["name"] for e in pod["containers"][0]["env"]}
    assert not names & {"MONGODB_URL", "API_TOKEN", "KOTLIN_SERVER_URL"}
    assert {e["valueFrom"]["secretKeyRef"]["name"] for e in pod["containers"][0]["env"] if "valueFrom" in e} == {
        "jervis-agent-secrets"}
    assert pod["automountServiceAccountToken"] is False
    # A chosen account gets no token either: agents need no Kubernetes API (issue 40).
    chosen = build_job(Settings(data_root=Path("/data"), agent_service_account="agents"), job())
    assert ApiClient().sanitize_for_serialization(chosen)["spec"]["template"]["spec"][
        "automountServiceAccountToken"] is False
