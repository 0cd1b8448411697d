"""The attack: an agent (or the project's tests it wrote) reads its own environment and uses what it
finds: `GIT_TOKEN` to push without the user's approval, the service's `API_TOKEN` or `MONGODB_URL`
to reach its API or database, a provider key its step never needed.

Every agent type (aider, openhands, claude, junie) in every mode (agent, test, git) on both runners:

- local: the real `LocalRunner`, in a service whose environment is full of secrets, with its
  entrypoint replaced by a script that writes its whole `os.environ` into the workspace (what the
  runner hands its subprocess, through the real sandbox); in agent mode also through the real
  entrypoint with `LOCAL_AGENT_COMMAND` set to that script (what the agent itself sees);
- Kubernetes: the whole `env` of the Job `build_job` makes, its secret references included.

Each lists the exact set of variable names, so a new variable (a new leak) fails the test, and
looks for every service secret's value anywhere in it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from app.agents.base import AgentJob
from app.agents.job_spec import build_job
from app.agents.local import LocalRunner
from app.agents.local_agents import LocalAgents
from app.agents.programs.claude import ClaudeCodeProgram, service_url
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from app.llm.anthropic_messages import agent_key
from tests.support import make_git_repo

AGENT_TYPES = ("aider", "openhands", "claude", "junie")
MODES = ("agent", "test", "commit")
ALL_CLOUD = ["anthropic", "openai", "gemini"]

#: The service's own secrets and configuration, each value unique so that any trace of it is found.
SECRETS = {
    "API_TOKEN": "service-api-token-1d8f3a",
    "MONGODB_URL": "mongodb://orchestrator:mongo-password-77c2@db.internal:27017",
    "KOTLIN_SERVER_URL": "http://kotlin-server.internal:5500",
    "ANTHROPIC_API_KEY": "sk-ant-service-key-5e1b0c",
    "OPENAI_API_KEY": "sk-openai-service-key-9a4d21",
    "GOOGLE_API_KEY": "AIza-google-service-key-3c7f",
    "GEMINI_API_KEY": "gemini-service-key-0b6e",
    "JUNIE_API_KEY": "junie-service-key-48aa",
    "GIT_TOKEN": "ghp_git-token-of-the-user-6f02",
    "GROQ_API_KEY": "gsk_unrelated-provider-key-21",
    "JERVIS_API_TOKEN": "terminal-client-token-c3",
    "LOCAL_LLM_API_BASE": "http://model-admin:llm-pass-0e@127.0.0.1:9/v1",
}
#: What a program needs to run, as the service has it.
BASIC = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "SSH_AUTH_SOCK": "/tmp/ssh-agent-of-the-user.sock",
         "HF_HOME": "/cache/hf", "AGENT_ENV_PASSTHROUGH": '["HF_HOME"]'}
#: What bubblewrap sets in the sandbox of agent and test steps: the directory it starts in.
SANDBOX = {"PWD"}
#: What the relay sets in an agent step's sandbox (app/agents/relay_routes.py): loopback is not proxied.
RELAY = {"NO_PROXY", "no_proxy"}
#: ... and for an HTTPS upstream elsewhere (Claude Code on Anthropic): its allow-listed CONNECT proxy.
RELAY_PROXY = {"HTTPS_PROXY", "https_proxy"}
#: The variables every step gets: the process basics, the pass-through and the contract's job variables.
COMMON = {"PATH", "HOME", "LANG", "LC_ALL", "HF_HOME", "TASK_ID", "CLIENT_ID", "PROJECT_ID", "WORKSPACE_PATH",
          "OLLAMA_URL", "KNOWLEDGEBASE_URL", "KNOWLEDGEBASE_WRITE_URL", "AGENT_TYPE", "ALLOW_GIT", "JERVIS_MODE",
          "JERVIS_ATTEMPT"}

DUMP = '''import json, os, pathlib
workspace = pathlib.Path(os.environ.get("WORKSPACE_PATH") or os.getcwd())
(workspace / "env-dump.json").write_text(json.dumps(dict(os.environ)))
(workspace / ".jervis").mkdir(exist_ok=True)
(workspace / ".jervis" / "result.json").write_text(json.dumps(
    {"success": True, "summary": "environment written", "changedFiles": [], "exitCode": 0}))
'''


@pytest.fixture
def dump_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Outside DATA_ROOT (the sandbox hides it): the script the runner starts."""
    path = tmp_path_factory.mktemp("dump") / "dump_env.py"
    path.write_text(DUMP, encoding="utf-8")
    return path


@pytest.fixture
def service_environ(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, dump_script: Path) -> dict[str, str]:
    """The service process's whole environment: PATH, a home, locale, an SSH agent, a pass-through
    name, the service's configuration and every secret; nothing else of the test's."""
    search = os.environ.get("PATH") or os.defpath
    for name in list(os.environ):
        if name != "PYTEST_CURRENT_TEST":
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    environ = {"PATH": search, "HOME": str(home), **BASIC, **SECRETS,
               "DATA_ROOT": str(tmp_path), "LOCAL_AGENT_COMMAND": json.dumps([sys.executable, str(dump_script)])}
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    return environ


def agent_job(workspace: Path, agent_type: str, mode: str, cloud: list[str]) -> AgentJob:
    return AgentJob(thread_id="thread-secrets-1", task_id="t-secrets", client_id="c1", project_id="p1",
                    agent_type=agent_type, workspace=workspace, mode=mode,  # type: ignore[arg-type]
                    timeout_seconds=60, cloud_providers=cloud)


def expected_names(agent_type: str, mode: str, cloud: list[str]) -> set[str]:
    """The whole environment of a step, by name, as the rule says: the git step alone gets
    `GIT_TOKEN` (and the SSH agent); an agent step its route's key only: Junie its own, Claude Code
    Anthropic's where the run allows it, Aider and OpenHands on the local model none."""
    if mode == "commit":
        return COMMON | {"GIT_TOKEN", "SSH_AUTH_SOCK"}
    if mode == "test":  # and where the sandbox lets the entrypoint install pytest
        return COMMON | SANDBOX | {"JERVIS_TOOLS_DIR"}
    keys = {"junie": {"JUNIE_API_KEY"}, "claude": {"ANTHROPIC_API_KEY"} if "anthropic" in cloud else set()}
    return COMMON | SANDBOX | RELAY | {"AGENT_COMMAND", "AGENT_MODEL"} | keys.get(agent_type, set())


def leaked(text: str, handed: set[str]) -> list[str]:
    """The service secrets whose value occurs in `text`, but those deliberately handed (`handed`)."""
    return [name for name, value in SECRETS.items() if name not in handed and value in text]


def brief(agent_type: str) -> StepBrief:
    return StepBrief(agent_type=agent_type, instructions="write the environment", task={"id": "t-secrets"})


async def run_local(workspace: Path, job: AgentJob, *, entrypoint: Path | None = None) -> dict[str, str]:
    settings = Settings()  # from the service's environment, secrets and all
    manager = WorkspaceManager(settings.data_root)
    runner = LocalRunner(manager, settings) if entrypoint is None else LocalRunner(manager, settings,
                                                                                 entrypoint=entrypoint)

    async def prepare() -> None:
        manager.prepare(workspace, brief(job.agent_type))

    result = await runner.run(job, prepare=prepare)
    dumped = workspace / "env-dump.json"
    assert dumped.is_file(), result.summary + "\n" + result.log_tail
    seen: dict[str, str] = json.loads(dumped.read_text(encoding="utf-8"))
    return seen


def cases() -> list[Any]:
    found = [pytest.param(agent_type, mode, ALL_CLOUD, id=f"{agent_type}-{mode}")
             for agent_type in AGENT_TYPES for mode in MODES]
    return [*found, pytest.param("claude", "agent", [], id="claude-agent-no-cloud")]


@pytest.mark.parametrize(("agent_type", "mode", "cloud"), cases())
async def test_the_local_runner_hands_each_step_exactly_its_environment(
        service_environ: dict[str, str], dump_script: Path, tmp_path: Path, agent_type: str, mode: str,
        cloud: list[str]) -> None:
    repo = make_git_repo(tmp_path / "repo")

    seen = await run_local(repo, agent_job(repo, agent_type, mode, cloud), entrypoint=dump_script)

    expected = expected_names(agent_type, mode, cloud)
    assert set(seen) == expected, f"extra {sorted(set(seen) - expected)}, missing {sorted(expected - set(seen))}"
    handed = expected & set(SECRETS)
    assert leaked(json.dumps(seen), handed) == []
    for name in handed:  # what it is handed is the service's own value, nothing made up
        assert seen[name] == SECRETS[name]


@pytest.mark.parametrize("agent_type", AGENT_TYPES)
async def test_the_agent_itself_sees_no_secret_it_does_not_need_through_the_real_entrypoint(
        service_environ: dict[str, str], tmp_path: Path, agent_type: str) -> None:
    """`LOCAL_AGENT_COMMAND` is the dump script, started by the real entrypoint in the sandbox: the
    agent's own environment is the runner's plus only the entrypoint's defaults for that agent."""
    repo = make_git_repo(tmp_path / "repo")

    seen = await run_local(repo, agent_job(repo, agent_type, "agent", ALL_CLOUD))

    by_entrypoint = {"aider": {"OLLAMA_API_BASE"}, "openhands": {"OLLAMA_API_BASE", "LLM_BASE_URL", "LLM_MODEL"},
                     "claude": {"IS_SANDBOX"} if os.geteuid() == 0 else set()}
    expected = expected_names(agent_type, "agent", ALL_CLOUD) | {"LITELLM_LOCAL_MODEL_COST_MAP"} | by_entrypoint.get(
        agent_type, set())
    assert set(seen) == expected, f"extra {sorted(set(seen) - expected)}, missing {sorted(expected - set(seen))}"
    assert leaked(json.dumps(seen), expected & set(SECRETS)) == []


def job_env(settings: Settings, job: AgentJob) -> tuple[dict[str, Any], str]:
    body = ApiClient().sanitize_for_serialization(build_job(settings, job))
    return {e["name"]: e for e in body["spec"]["template"]["spec"]["containers"][0]["env"]}, json.dumps(body)


@pytest.mark.parametrize(("agent_type", "mode", "cloud"), cases())
def test_a_kubernetes_job_names_exactly_its_environment_and_references_only_its_secrets(
        service_environ: dict[str, str], tmp_path: Path, agent_type: str, mode: str, cloud: list[str]) -> None:
    settings = Settings(data_root=tmp_path)
    env, whole = job_env(settings, agent_job(tmp_path / "repo", agent_type, mode, cloud))

    secrets = expected_names(agent_type, mode, cloud) & set(SECRETS)
    # The image has its basics; HOME is the Job's own scratch emptyDir (its root file system is read-only).
    plain = COMMON - {"PATH", "LANG", "LC_ALL", "HF_HOME"} | {"AGENT_MODEL"}
    if mode == "agent" and agent_type == "aider":
        plain |= {"AGENT_EXTRA_ARGS"}
    assert {name for name, e in env.items() if "value" in e} == plain
    references = {name: e["valueFrom"]["secretKeyRef"] for name, e in env.items() if "value" not in e}
    assert references == {name: {"name": settings.agent_secret_name, "key": name, "optional": True}
                          for name in secrets}
    assert leaked(whole, set()) == []  # secrets by reference only: no value in the Job object


@pytest.mark.parametrize("runner", ["local", "kubernetes"])
async def test_aider_and_openhands_on_a_cloud_model_get_that_providers_key_only(
        service_environ: dict[str, str], monkeypatch: pytest.MonkeyPatch, dump_script: Path, tmp_path: Path,
        runner: str) -> None:
    monkeypatch.setenv("AGENT_MODELS", json.dumps({"aider": "openai/gpt-4o", "openhands": "gemini/gemini-2.5-pro"}))
    repo = make_git_repo(tmp_path / "repo")
    for agent_type, keys in (("aider", {"OPENAI_API_KEY"}), ("openhands", {"GOOGLE_API_KEY"})):
        job = agent_job(repo, agent_type, "agent", [])
        if runner == "local":
            names = set(await run_local(repo, job, entrypoint=dump_script))
        else:
            names = set(job_env(Settings(), job)[0])
        assert names & set(SECRETS) == keys, agent_type


class InstalledClaude(ClaudeCodeProgram):
    """The real Claude Code program's variables; its install is not needed by the dump script."""

    def installed(self) -> bool:
        return True


@pytest.mark.parametrize(("service_key", "cloud", "route"), [
    (False, ["anthropic"], "local"),   # no key: the service's /v1/messages
    (True, [], "local"),               # a key, but the run does not allow Anthropic: the local route all the same
    (True, ["anthropic"], "anthropic"),
])
async def test_claude_code_on_the_local_route_gets_a_derived_key_never_the_api_token(
        service_environ: dict[str, str], monkeypatch: pytest.MonkeyPatch, dump_script: Path, tmp_path: Path,
        service_key: bool, cloud: list[str], route: str) -> None:
    """The local runner's Claude Code: `ANTHROPIC_API_KEY` is a key derived from `API_TOKEN` (enough
    for `/v1/messages`, nothing else) on the local route, the service's Anthropic key only on
    Anthropic in a run that allows it."""
    monkeypatch.delenv("LOCAL_AGENT_COMMAND")
    monkeypatch.setenv("LOCAL_AGENTS", json.dumps({"claude": "claude"}))
    if not service_key:
        monkeypatch.delenv("ANTHROPIC_API_KEY")
    settings = Settings()
    manager = WorkspaceManager(settings.data_root)
    runner = LocalRunner(manager, settings, entrypoint=dump_script,
                         agents=LocalAgents(settings, programs={"claude": InstalledClaude(settings)}))
    repo = make_git_repo(tmp_path / "repo")

    async def prepare() -> None:
        manager.prepare(repo, brief("claude"))

    result = await runner.run(agent_job(repo, "claude", "agent", cloud), prepare=prepare)
    seen = json.loads((repo / "env-dump.json").read_text(encoding="utf-8"))

    assert result.program == "claude"
    program = {"PWD", "DISABLE_TELEMETRY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER",
               "DISABLE_ERROR_REPORTING", "AGENT_MODEL", "ANTHROPIC_API_KEY"} | RELAY
    if route == "local":
        program |= {"ANTHROPIC_BASE_URL", "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
                    "API_TIMEOUT_MS"}
        assert seen["ANTHROPIC_API_KEY"] == agent_key(SECRETS["API_TOKEN"])
        assert seen["ANTHROPIC_BASE_URL"] == service_url(settings)
        assert leaked(json.dumps(seen), set()) == []
    else:
        program |= RELAY_PROXY
        assert seen["ANTHROPIC_API_KEY"] == SECRETS["ANTHROPIC_API_KEY"]
        assert leaked(json.dumps(seen), {"ANTHROPIC_API_KEY"}) == []
    assert set(seen) == COMMON | program
