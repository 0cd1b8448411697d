"""Which endpoints one sandboxed step may reach through the relay (`relay.py`), and how its
environment names them inside: nothing else is on its wire.

The sandbox has a network namespace of its own (only its own `lo`); every route is a loopback
port inside it that the forwarder (`relay_forwarder.py`) connects to a Unix socket of the relay.
What a step gets, from its environment and the settings:

- the model endpoint(s) the step's environment names: the OpenAI-compatible base of Aider
  (`OPENAI_API_BASE`) and OpenHands (`LLM_BASE_URL`), Claude Code's `ANTHROPIC_BASE_URL`, Ollama
  (`OLLAMA_URL`) when the agent's model is an Ollama one or nothing else names a model (never for
  Claude Code, whose model is reached through the service), and the
  local OpenAI-compatible server for `LOCAL_AGENT_COMMAND`;
- the knowledge base (`KNOWLEDGEBASE_URL`, `KNOWLEDGEBASE_WRITE_URL`) only for the agents that
  start its MCP server (Claude Code, Junie);
- the service's own API (Claude Code on the local model) only as `POST /v1/messages` and its
  `count_tokens`: an HTTP-aware route that refuses every other path. Any endpoint on the
  service's own address gets that route, whatever variable named it.

A loopback upstream keeps its port inside, so the configured URL works unchanged (one below 1024,
which nothing in the sandbox may listen on, gets another and its URL rewritten). A plain-HTTP
upstream elsewhere gets a loopback port inside and the variable is rewritten to it. An HTTPS
upstream elsewhere (Anthropic's API for Claude Code with a key) goes through an allow-listed
CONNECT proxy (`HTTPS_PROXY` inside) that opens exactly those host:ports: TLS stays end to end,
and the names are resolved outside (the sandbox has no DNS). Test runs get no route at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import SplitResult, urlsplit

from app.agents.base import AgentJob
from app.agents.programs.claude import service_url
from app.config import Settings
from app.runtime.listen import is_loopback

#: The variables that name a model endpoint, in the order their routes are made.
MODEL_VARIABLES = ("OPENAI_API_BASE", "LLM_BASE_URL", "ANTHROPIC_BASE_URL")
#: The knowledge base's endpoints, for the agents that start its MCP server.
KB_VARIABLES = ("KNOWLEDGEBASE_URL", "KNOWLEDGEBASE_WRITE_URL")
KB_AGENTS = frozenset({"claude", "junie"})
#: What an agent may ask of the service's own API: the Messages API, nothing else.
SERVICE_PATHS = frozenset({"/v1/messages", "/v1/messages/count_tokens"})
#: Where Claude Code goes with a key and no `ANTHROPIC_API_BASE`.
ANTHROPIC_API = "https://api.anthropic.com"
#: The proxy variables an agent's libraries read (the host's own proxy is unreachable inside).
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
                   "http_proxy", "https_proxy", "all_proxy", "no_proxy")
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
#: The first loopback port tried for an upstream that has none inside (a remote one, the proxy).
FIRST_FREE_PORT = 18_400
#: Ports below this need a capability to listen on, which nothing in the sandbox has: an upstream
#: there gets a free port inside and its URL rewritten.
FIRST_UNPRIVILEGED_PORT = 1024

Kind = Literal["tcp", "http", "connect"]


@dataclass(frozen=True)
class Route:
    """One endpoint inside the sandbox: `127.0.0.1:port` → the relay's `<name>.sock` → upstream."""

    name: str
    port: int
    """The loopback port the forwarder listens on inside the sandbox."""
    kind: Kind
    """`tcp`: bytes both ways; `http`: requests checked against `paths`; `connect`: a CONNECT proxy."""
    upstream: tuple[str, int] = ("", 0)
    """Host and port the relay connects to (`tcp`, `http`)."""
    paths: frozenset[str] = frozenset()
    """`http`: the only request paths let through (the query string aside), POST only."""
    allowed: frozenset[tuple[str, int]] = frozenset()
    """`connect`: the only host:port pairs the proxy opens."""


@dataclass(frozen=True)
class StepRoutes:
    """Every route of one step and the environment changes that make the agent use them."""

    routes: tuple[Route, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    """Variables to set inside (rewritten URLs, the proxy)."""


def step_routes(settings: Settings, job: AgentJob, program: str | None, env: Mapping[str, str]) -> StepRoutes:
    """The routes of one step (see the module's docstring). `env` is the entrypoint's environment."""
    if job.entrypoint_mode != "agent":
        return StepRoutes()
    urls = [(name, env[name]) for name in MODEL_VARIABLES if env.get(name)]
    if program == "command" and settings.local_llm_api_base:
        urls.append(("", settings.local_llm_api_base))
    if program == "claude" and not env.get("ANTHROPIC_BASE_URL"):
        urls.append(("", ANTHROPIC_API))
    # Claude Code's model label may name an Ollama model, but it reaches it through the service
    if env.get("OLLAMA_URL") and program != "claude" and (not urls or env.get("AGENT_MODEL", "").startswith("ollama")):
        urls.append(("OLLAMA_URL", env["OLLAMA_URL"]))
    if job.agent_type in KB_AGENTS or program in KB_AGENTS:
        urls += [(name, env[name]) for name in KB_VARIABLES if env.get(name)]
    return _Builder(_address(service_url(settings))).build(urls)


class _Builder:
    def __init__(self, service: tuple[str, int] | None) -> None:
        self._service = service
        self._routes: list[Route] = []
        self._env: dict[str, str] = {}
        self._proxied: set[tuple[str, int]] = set()

    def build(self, urls: list[tuple[str, str]]) -> StepRoutes:
        for variable, url in urls:
            self._add(variable, url)
        if self._proxied:
            port = self._free_port()
            self._routes.append(Route(name=f"r{len(self._routes)}", port=port, kind="connect",
                                      allowed=frozenset(self._proxied)))
            proxy = f"http://127.0.0.1:{port}"
            self._env.update(HTTPS_PROXY=proxy, https_proxy=proxy)
        loopback = "127.0.0.1,localhost,::1"
        self._env.update(NO_PROXY=loopback, no_proxy=loopback)
        return StepRoutes(tuple(self._routes), self._env)

    def _add(self, variable: str, url: str) -> None:
        parts = urlsplit(url.strip())
        address = _address(url)
        if address is None:
            return
        host, port = address
        if self._service is not None and _same_endpoint(address, self._service):
            inside = self._route(port, "http", ("127.0.0.1", self._service[1]), paths=SERVICE_PATHS)
        elif _is_loopback(host):
            inside = self._route(port, "tcp", ("127.0.0.1" if host in LOOPBACK_NAMES else host, port))
        elif parts.scheme == "https":
            self._proxied.add(address)
            return
        else:
            inside = self._route(None, "tcp", address)
        if variable and (inside != port or not _is_loopback(host)):
            self._env[variable] = _with_netloc(parts, _userinfo(parts) + f"127.0.0.1:{inside}")

    def _route(self, port: int | None, kind: Kind, upstream: tuple[str, int], *,
               paths: frozenset[str] = frozenset()) -> int:
        """The inside port of the route to `upstream` (an existing one is reused)."""
        for route in self._routes:
            if route.upstream == upstream and route.kind == kind:
                return route.port
        if port is None or port < FIRST_UNPRIVILEGED_PORT or any(route.port == port for route in self._routes):
            port = self._free_port()
        self._routes.append(Route(name=f"r{len(self._routes)}", port=port, kind=kind, upstream=upstream, paths=paths))
        return port

    def _free_port(self) -> int:
        taken = {route.port for route in self._routes}
        return next(port for port in range(FIRST_FREE_PORT, 65_536) if port not in taken)


def _address(url: str) -> tuple[str, int] | None:
    """Host and port of an http(s) URL (the scheme's default port when none is given)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80)


def _is_loopback(host: str) -> bool:
    """`listen.is_loopback`, and the other names Debian's hosts file gives loopback."""
    return host in LOOPBACK_NAMES or is_loopback(host)


def _same_endpoint(one: tuple[str, int], other: tuple[str, int]) -> bool:
    """The same port, and both loopback or the same host (the service listens on every interface
    when its own URL is loopback for an any-address)."""
    if one[1] != other[1]:
        return False
    return one[0] == other[0] or (_is_loopback(one[0]) and _is_loopback(other[0]))


def _userinfo(parts: SplitResult) -> str:
    """`user:password@` of a URL as written (a model server behind basic auth keeps it), or ''."""
    return parts.netloc.rpartition("@")[0] + "@" if "@" in parts.netloc else ""


def _with_netloc(parts: SplitResult, netloc: str) -> str:
    return parts._replace(netloc=netloc).geturl()
