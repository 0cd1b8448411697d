"""Issue 40, "only the model on the wire": a hostile agent in the real local runner's real bwrap
sandbox tries every way onto the host's network and sockets; it reaches only what its step's
relay routes allow (app/agents/relay*.py, app/agents/sandbox.py)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from app.agents.base import AgentJob
from app.agents.control import AgentControl, use_control
from app.agents.local import LocalRunner
from app.agents.local_agents import LocalAgents
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from app.dev.embedded_mongo import EmbeddedMongo
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.llm_server import Reply, ScriptedLlmServer
from tests.support import make_git_repo
from tests.unit.agents.test_local import wait_for_agent
from tests.unit.agents.test_local_reattach import until

PATH = os.environ["PATH"]
STREAMED = "The relay streams this answer in many small pieces, as the model produced them."

#: Connects wherever PROBE_TARGETS says and reports each outcome (`ok` or the error's name), then
#: asks the model for a streamed chat completion and reports its pieces.
HOSTILE_AGENT = r'''
import http.client, json, os, socket
from pathlib import Path
targets = json.loads(os.environ["PROBE_TARGETS"])

def attempt(family, address):
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(5)
    try:
        sock.connect(address)
        return "ok"
    except OSError as exc:
        return type(exc).__name__
    finally:
        sock.close()

def request(port, method, path, body):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        connection.request(method, path, body=json.dumps(body) if body is not None else None,
                           headers={"content-type": "application/json", "x-api-key": "local",
                                    "anthropic-version": "2023-06-01"})
        response = connection.getresponse()
        pieces = []
        for line in response:
            line = line.decode().strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            event = json.loads(line[5:])
            delta = (event.get("choices") or [{}])[0].get("delta", {}).get("content") \
                or event.get("delta", {}).get("text")
            if delta:
                pieces.append(delta)
        return {"status": response.status, "pieces": pieces}
    except OSError as exc:
        return {"status": type(exc).__name__, "pieces": []}
    finally:
        connection.close()

report = {name: attempt(socket.AF_INET, ("127.0.0.1", port)) for name, port in targets["tcp"].items()}
report["abstract"] = attempt(socket.AF_UNIX, "\0" + targets["abstract"])
report["run_socket"] = attempt(socket.AF_UNIX, targets["run_socket"])
report["run_listing"] = sorted(os.listdir("/run"))
for name, (port, method, path, body) in targets["http"].items():
    report[name] = request(port, method, path, body)
(Path(".jervis") / "result.json").write_text(json.dumps({"success": True, "summary": json.dumps(report)}))
'''


def _job(workspace: Path) -> AgentJob:
    return AgentJob(thread_id="thread-net-abcd", task_id="t1", client_id="c1", agent_type="command",
                    workspace=workspace, timeout_seconds=60)


class _Listeners:
    """What the host offers on loopback and in sockets, each listening for real."""

    def __init__(self) -> None:
        self.abstract_name = f"jervis-net-test-{uuid.uuid4().hex[:8]}"
        self.run_socket = Path(f"/run/jervis-net-test-{uuid.uuid4().hex[:8]}.sock")
        self.sockets: list[socket.socket] = []
        abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        abstract.bind("\0" + self.abstract_name)
        filesystem = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        filesystem.bind(str(self.run_socket))
        other = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        other.bind(("127.0.0.1", 0))
        self.other_port = other.getsockname()[1]
        for sock in (abstract, filesystem, other):
            sock.listen(8)
            self.sockets.append(sock)

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()
        self.run_socket.unlink(missing_ok=True)


@pytest.fixture
def listeners() -> Iterator[_Listeners]:
    found = _Listeners()
    try:
        yield found
    finally:
        found.close()


async def _run_hostile_agent(tmp_path: Path, settings: Settings, targets: Mapping[str, object], *,
                             passed: dict[str, str] | None = None) -> dict[str, object]:
    """The hostile agent as the step's agent; `passed`: more of the service's environment it gets."""
    data = tmp_path / "data"
    workspace = make_git_repo(data / "c1" / "ws")
    agent = tmp_path / "hostile_agent.py"
    agent.write_text(HOSTILE_AGENT)
    settings = settings.model_copy(update={
        "local_agent_command": [sys.executable, str(agent)], "agent_sandbox": "bwrap",
        "agent_env_passthrough": ["PROBE_TARGETS", *(passed or {})]})
    manager = WorkspaceManager(data)

    async def prepare() -> None:
        manager.prepare(workspace, StepBrief(agent_type="command", instructions="go", task={"id": "t1"}))

    environ = {"PATH": PATH, "HOME": str(tmp_path), "PROBE_TARGETS": json.dumps(targets), **(passed or {})}
    result = await LocalRunner(manager, settings, environ=environ).run(_job(workspace), prepare=prepare)
    assert result.success, result.log_tail
    report: dict[str, object] = json.loads(result.summary)
    return report


def _chat(model: str) -> dict[str, object]:
    return {"model": model, "stream": True, "messages": [{"role": "user", "content": "stream please"}]}


async def test_inside_the_sandbox_mongodb_loopback_and_host_sockets_are_refused_while_the_model_streams(
        tmp_path: Path, mongo_server: EmbeddedMongo, llm: ScriptedLlmServer, kotlin_server: FakeKotlinServer,
        listeners: _Listeners) -> None:
    llm.script(Reply(content=STREAMED, chunk_size=6))
    mongo_port = int(mongo_server.url.rsplit(":", 1)[1])
    targets = {"tcp": {"mongodb": mongo_port, "api": kotlin_server.port, "other_port": listeners.other_port},
               "abstract": listeners.abstract_name, "run_socket": str(listeners.run_socket),
               "http": {"model": [llm.port, "POST", "/v1/chat/completions", _chat("test-model")],
                        "api_request": [kotlin_server.port, "GET", "/", None]}}
    report = await _run_hostile_agent(tmp_path, Settings(local_llm_api_base=f"{llm.url}/v1"), targets)

    assert report["mongodb"] == "ConnectionRefusedError"  # the embedded MongoDB, no password
    assert report["api"] == "ConnectionRefusedError" and report["other_port"] == "ConnectionRefusedError"
    assert report["api_request"] == {"status": "ConnectionRefusedError", "pieces": []}
    assert report["abstract"] == "ConnectionRefusedError"  # abstract sockets belong to the network namespace
    assert report["run_socket"] == "FileNotFoundError"  # /run is hidden
    assert report["run_listing"] == ["jervis-relay"]  # nothing of the host's /run but the step's relay
    model = report["model"]
    assert isinstance(model, dict) and model["status"] == 200
    assert "".join(model["pieces"]) == STREAMED and len(model["pieces"]) > 5  # streamed, piece by piece


async def test_claude_on_the_local_model_reaches_the_service_only_through_v1_messages(
        tmp_path: Path, llm: ScriptedLlmServer) -> None:
    """The scripted server stands in for the service's own API (it speaks `/v1/messages` too):
    ANTHROPIC_BASE_URL names the service's address, so the relay's route to it is the HTTP-aware
    one that lets `POST /v1/messages` through and refuses every other request."""
    llm.script(Reply(content=STREAMED, chunk_size=6))
    service = Settings(host="127.0.0.1", port=llm.port)
    messages = {"model": "local", "max_tokens": 200, "stream": True,
                "messages": [{"role": "user", "content": "stream please"}]}
    targets = {"tcp": {}, "abstract": "none", "run_socket": "/run/none.sock",
               "http": {"messages": [llm.port, "POST", "/v1/messages", messages],
                        "models": [llm.port, "GET", "/v1/models", None],
                        "chat": [llm.port, "POST", "/v1/chat/completions", _chat("test-model")],
                        "escape": [llm.port, "POST", "/v1/messages/../chat/completions", _chat("test-model")]}}
    report = await _run_hostile_agent(tmp_path, service, targets, passed={"ANTHROPIC_BASE_URL": llm.url})

    messages_answer = report["messages"]
    assert isinstance(messages_answer, dict) and messages_answer["status"] == 200
    assert "".join(messages_answer["pieces"]) == STREAMED
    for refused in ("models", "chat", "escape"):
        assert report[refused] == {"status": 403, "pieces": []}, refused
    assert [request.path for request in llm.requests] == ["/v1/messages"]


#: Waits for `go` in its workspace, then asks the model (the relay's sockets were bound again by
#: whichever service watches it by then).
PATIENT_AGENT = r'''
import http.client, json, os, sys, time
from pathlib import Path
print("waiting for go", flush=True)
waited = time.monotonic()
while not Path("go").exists() and time.monotonic() - waited < 60:  # a failed test leaves no agent for long
    time.sleep(0.05)
port = int(os.environ["MODEL_PORT"])
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
connection.request("POST", "/v1/chat/completions", body=json.dumps({"model": "test-model", "stream": False,
                   "messages": [{"role": "user", "content": "hello"}]}), headers={"content-type": "application/json"})
answer = json.loads(connection.getresponse().read())["choices"][0]["message"]["content"]
(Path(".jervis") / "result.json").write_text(json.dumps({"success": True, "summary": answer}))
'''


async def test_an_agent_reattached_after_a_service_restart_reaches_its_model_again(
        tmp_path: Path, llm: ScriptedLlmServer) -> None:
    """The service dies mid-step (its relay and sockets with it); the restarted service re-attaches
    to the still running sandbox and binds the step's sockets again where the sandbox looks."""
    llm.script(Reply(content="answered after the restart"))
    data = tmp_path / "data"
    workspace = make_git_repo(data / "c1" / "ws")
    agent = tmp_path / "patient_agent.py"
    agent.write_text(PATIENT_AGENT)
    settings = Settings(local_agent_command=[sys.executable, str(agent)], agent_sandbox="bwrap",
                        local_llm_api_base=f"{llm.url}/v1", agent_env_passthrough=["MODEL_PORT"])
    environ = {"PATH": PATH, "HOME": str(tmp_path), "MODEL_PORT": str(llm.port)}
    manager = WorkspaceManager(data)

    async def prepare() -> None:
        manager.prepare(workspace, StepBrief(agent_type="command", instructions="go", task={"id": "t1"}))

    control, lines = AgentControl(), list[str]()

    async def first_service() -> object:
        use_control(control)
        return await LocalRunner(manager, settings, environ=environ).run(_job(workspace), prepare=prepare,
                                                                         on_log=lines.append)

    task = asyncio.create_task(first_service())
    await wait_for_agent(workspace, lines, "waiting for go")
    control.suspend("shutdown")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not list((data / ".orchestrator" / "relay").glob("*/*"))  # the dead service's sockets are gone

    restarted = LocalRunner(manager, settings, environ=environ)
    adopted = asyncio.create_task(restarted.run(_job(workspace), prepare=prepare))
    await until(lambda: list((data / ".orchestrator" / "relay").glob("*/*.sock")), "the relay bound again")
    (workspace / "go").write_text("")
    result = await asyncio.wait_for(adopted, 60)
    assert result.success and result.summary == "answered after the restart", result.log_tail
    assert not list((data / ".orchestrator" / "relay").iterdir())  # the step ended: nothing of it is left


#: Claude Code with a key reaches Anthropic through the relay's CONNECT proxy: the agent tries that
#: proxy for everything else it would like to reach.
TUNNELLING_AGENT = r'''
import json, os, socket
from pathlib import Path
proxy = os.environ["HTTPS_PROXY"].removeprefix("http://")
host, port = proxy.rsplit(":", 1)
report = {"proxy_host": host}
for target in json.loads(os.environ["PROBE_TARGETS"]):
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nhost: {target}\r\n\r\n".encode())
        report[target] = sock.recv(200).split(b"\r\n", 1)[0].decode()
(Path(".jervis") / "result.json").write_text(json.dumps({"success": True, "summary": json.dumps(report)}))
'''


class _ClaudeWithAKey:
    """Stands in for Claude Code on Anthropic (the program `claude`, no ANTHROPIC_BASE_URL): the
    relay gives its step the CONNECT proxy to api.anthropic.com:443 only; the hostile agent runs."""

    name = "claude"

    def __init__(self, agent: Path) -> None:
        self._agent = agent

    def installed(self) -> bool:
        return True

    def install(self, log: object) -> None:
        return None

    def env(self) -> dict[str, str]:
        return {"AGENT_TYPE": "command", "AGENT_COMMAND": json.dumps([sys.executable, str(self._agent)])}

    def describe(self) -> str:
        return "claude (hostile stand-in)"


async def test_the_connect_proxy_of_claude_with_a_key_opens_nothing_but_anthropic(
        tmp_path: Path, mongo_server: EmbeddedMongo, kotlin_server: FakeKotlinServer) -> None:
    data = tmp_path / "data"
    workspace = make_git_repo(data / "c1" / "ws")
    (tmp_path / "agent").mkdir()
    agent = tmp_path / "agent" / "tunnelling_agent.py"  # shown to the sandbox by AGENT_SANDBOX_WRITABLE
    agent.write_text(TUNNELLING_AGENT)
    mongo = mongo_server.url.removeprefix("mongodb://")
    targets = [mongo, f"localhost:{kotlin_server.port}", "169.254.169.254:80", "api.anthropic.com:80",
               "api.anthropic.com.evil.example:443"]
    settings = Settings(agent_sandbox="bwrap", agent_env_passthrough=["PROBE_TARGETS"],
                        agent_sandbox_writable=[str(agent.parent)],
                        local_agents={"aider": "aider", "openhands": "aider", "claude": "claude", "junie": "aider"})
    agents = LocalAgents(settings, programs={"claude": _ClaudeWithAKey(agent)})
    manager = WorkspaceManager(data)

    async def prepare() -> None:
        manager.prepare(workspace, StepBrief(agent_type="claude", instructions="go", task={"id": "t1"}))

    environ = {"PATH": PATH, "HOME": str(tmp_path), "PROBE_TARGETS": json.dumps(targets)}
    job = AgentJob(thread_id="thread-net-abcd", task_id="t1", client_id="c1", agent_type="claude",
                   workspace=workspace, timeout_seconds=60)
    result = await LocalRunner(manager, settings, environ=environ, agents=agents).run(job, prepare=prepare)

    assert result.success, result.log_tail
    report = json.loads(result.summary)
    assert report.pop("proxy_host") == "127.0.0.1"
    assert report == dict.fromkeys(targets, "HTTP/1.1 403 Refused")
