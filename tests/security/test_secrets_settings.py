"""The attack through configuration: an operator (or a compose file copied from a how-to) names a
service variable or a secret in `AGENT_ENV_PASSTHROUGH` or `AGENT_SECRET_KEYS`, and every agent
gets the database URL, Kotlin's URL, `API_TOKEN` or `GIT_TOKEN`. What belongs to the service is
derived from its settings (every variable they read), not a hand list, and the local environment
is built without it even where the settings were never validated."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from app.agent_settings import service_variables
from app.agents.agent_env import local_agent_env
from app.agents.base import AgentJob
from app.config import Settings

SERVICE_ENVIRON = {
    "PATH": "/usr/bin", "HOME": "/home/jervis", "MONGODB_URL": "mongodb://u:mongo-pass-1@db",
    "mongodb_url": "mongodb://u:mongo-pass-2@db", "API_TOKEN": "service-token-3", "api_token": "service-token-4",
    "KOTLIN_SERVER_URL": "http://kotlin.internal:5500", "DATA_ROOT": "/srv/data", "POD_NAME": "orchestrator-0",
    "LOCAL_LLM_API_BASE": "http://admin:llm-pass-5@127.0.0.1:9/v1", "JERVIS_API_TOKEN": "client-token-6",
    "GIT_TOKEN": "ghp_user-token-7", "ANTHROPIC_API_KEY": "sk-ant-service-8", "OPENAI_API_KEY": "sk-openai-9",
    "git_token": "ghp_user-token-10", "openai_api_key": "sk-openai-11",
}


@pytest.mark.parametrize("name", ["KOTLIN_SERVER_URL", "MONGODB_URL", "API_TOKEN", "api_token", "Kotlin_Server_Url",
                                  "DATA_ROOT", "LOCAL_LLM_API_BASE", "MONGODB_DATABASE", "JERVIS_API_TOKEN",
                                  "CONSOLE_SESSION_HOURS", "AGENT_SECRET_NAME"])
@pytest.mark.parametrize("setting", ["agent_env_passthrough", "agent_secret_keys"])
def test_no_variable_of_the_service_can_be_configured_for_agents(setting: str, name: str) -> None:
    with pytest.raises(ValidationError, match=f"{name} belong to the service"):
        Settings(**{setting: ["HF_HOME", name]})


@pytest.mark.parametrize("name", ["GIT_TOKEN", "ANTHROPIC_API_KEY", "openai_api_key", "JUNIE_API_KEY", "MY_KEY"])
def test_a_secret_reaches_agents_only_through_agent_secret_keys_never_by_pass_through(name: str) -> None:
    with pytest.raises(ValidationError, match="secrets reach agents only through AGENT_SECRET_KEYS"):
        Settings(agent_secret_keys=["GIT_TOKEN", "MY_KEY"], agent_env_passthrough=[name])


def test_every_setting_of_the_service_is_the_services_but_the_contracts_own() -> None:
    """A setting added tomorrow is the service's too: derived, not listed."""
    service = service_variables(Settings)
    fields = {name.upper() for name in Settings.model_fields}
    assert fields - service == {"OLLAMA_URL", "KNOWLEDGEBASE_URL", "KNOWLEDGEBASE_WRITE_URL", "ANTHROPIC_API_KEY",
                                "OPENAI_API_KEY", "GOOGLE_API_KEY"}
    assert {"MONGODB_URL", "API_TOKEN", "KOTLIN_SERVER_URL", "JERVIS_API_TOKEN"} <= service


@pytest.mark.parametrize("mode", ["agent", "test", "commit"])
def test_the_local_environment_drops_the_services_variables_whatever_the_settings_say(mode: str) -> None:
    """Settings changed after validation (`model_copy` does not validate) still hand nothing of the
    service's: the local environment is filtered by the same derived set, in any case of the name."""
    settings = Settings().model_copy(update={
        "agent_env_passthrough": ["MONGODB_URL", "mongodb_url", "api_token", "KOTLIN_SERVER_URL", "DATA_ROOT",
                                  "POD_NAME", "LOCAL_LLM_API_BASE", "JERVIS_API_TOKEN", "GIT_TOKEN",
                                  "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "git_token", "openai_api_key"],
        "agent_secret_keys": ["API_TOKEN", "MONGODB_URL", "GIT_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"]})
    job = AgentJob(thread_id="thread-t1", task_id="t1", client_id="c1", agent_type="aider", mode=mode,  # type: ignore[arg-type]
                   workspace=Path("/srv/data/ws"), cloud_providers=["anthropic", "openai"])

    env = local_agent_env(SERVICE_ENVIRON, settings, job, {})

    picked = set(env) & set(SERVICE_ENVIRON)
    assert picked == {"PATH", "HOME"} | ({"GIT_TOKEN"} if mode == "commit" else set())
