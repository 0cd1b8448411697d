"""Which endpoints each step reaches through the relay (app/agents/relay_routes.py)."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from app.agents.base import AgentJob
from app.agents.programs.aider import AiderProgram
from app.agents.programs.claude import ClaudeCodeProgram
from app.agents.relay_routes import ANTHROPIC_API, SERVICE_PATHS, step_routes
from app.config import Settings


def _job(agent_type: str = "aider", mode: str = "agent") -> AgentJob:
    return AgentJob(thread_id="thread-t1-abcd", task_id="t1", client_id="c1", agent_type=agent_type,
                    workspace=Path("/data/c1/ws"), mode=mode)  # type: ignore[arg-type]


BASE = {"OLLAMA_URL": "http://127.0.0.1:11434", "KNOWLEDGEBASE_URL": "http://127.0.0.1:8100",
        "KNOWLEDGEBASE_WRITE_URL": "http://127.0.0.1:8100"}


def test_aider_on_the_embedded_model_reaches_that_model_only_on_its_own_port() -> None:
    settings = Settings(local_llm_api_base="http://127.0.0.1:8012/v1")
    env = {**BASE, **AiderProgram(settings).env()}
    found = step_routes(settings, _job(), "aider", env)
    assert [(route.port, route.kind, route.upstream) for route in found.routes] == [
        (8012, "tcp", ("127.0.0.1", 8012))]
    assert "OPENAI_API_BASE" not in found.env and "HTTPS_PROXY" not in found.env


def test_aider_on_ollama_reaches_ollama() -> None:
    settings = Settings(local_llm_api_base="")
    env = {**BASE, **AiderProgram(settings).env()}
    assert [route.upstream for route in step_routes(settings, _job(), "aider", env).routes] == [
        ("127.0.0.1", 11434)]


def test_claude_on_the_local_model_reaches_only_the_services_messages_and_the_kb() -> None:
    settings = Settings(host="0.0.0.0", port=8090)
    env = {**BASE, **ClaudeCodeProgram(settings, environ={"PATH": "/bin"}).env()}
    found = step_routes(settings, _job("claude"), "claude", env)
    service, kb = found.routes
    assert (service.port, service.kind, service.upstream, service.paths) == (
        8090, "http", ("127.0.0.1", 8090), SERVICE_PATHS)
    assert (kb.port, kb.kind) == (8100, "tcp")


def test_claude_with_a_key_reaches_anthropic_through_the_connect_proxy_only() -> None:
    settings = Settings(anthropic_api_key=SecretStr("sk-test"))
    env = ClaudeCodeProgram(settings, environ={"PATH": "/bin"}).env()
    found = step_routes(settings, _job("claude"), "claude", env)
    (proxy,) = found.routes
    assert proxy.kind == "connect" and proxy.allowed == {("api.anthropic.com", 443)}
    assert found.env["HTTPS_PROXY"] == f"http://127.0.0.1:{proxy.port}" and ANTHROPIC_API.startswith("https://")
    assert "127.0.0.1" in found.env["NO_PROXY"]


def test_a_remote_plain_http_model_gets_a_loopback_port_and_a_rewritten_url() -> None:
    settings = Settings(local_llm_api_base="")
    env = {**BASE, "OLLAMA_URL": "http://gpu-box:11434", **AiderProgram(settings).env()}
    found = step_routes(settings, _job(), "aider", env)
    (route,) = found.routes
    assert route.upstream == ("gpu-box", 11434) and found.env["OLLAMA_URL"] == f"http://127.0.0.1:{route.port}"


def test_a_model_url_on_the_services_own_address_gets_the_messages_only_route() -> None:
    settings = Settings(host="127.0.0.1", port=8090, local_llm_api_base="http://localhost:8090/v1")
    env = {**BASE, **AiderProgram(settings).env()}
    (route,) = step_routes(settings, _job(), "aider", env).routes
    assert route.kind == "http" and route.paths == SERVICE_PATHS


def test_test_runs_and_the_kb_for_agents_without_its_mcp_server_get_nothing() -> None:
    settings = Settings(local_llm_api_base="http://127.0.0.1:8012/v1")
    env = {**BASE, **AiderProgram(settings).env()}
    assert step_routes(settings, _job(mode="test"), None, env).routes == ()
    assert all(route.port != 8100 for route in step_routes(settings, _job(), "aider", env).routes)
