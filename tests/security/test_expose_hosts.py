"""DNS rebinding against the loopback service: a page on a name its author controls, re-pointed at
127.0.0.1, talks to the development server as its own origin. The browser still sends that name as
`Host`; the service must answer it 400 before any route (a run started, the console) sees it, while
its own clients (the terminal client, Claude Code through the service's `/v1/messages`) still pass.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.agents.programs.claude import service_url
from app.cli.client import ServiceClient
from app.config import Settings

pytestmark = pytest.mark.slow


def get(service: Any, host: str, path: str = "/health") -> int:
    return httpx.get(f"{service.url}{path}", headers={"Host": host}, timeout=30).status_code


def test_a_rebound_name_gets_400_on_every_route(service_factory: Any) -> None:
    service = service_factory().start()
    port = service.port
    for host in ("attacker.example", f"attacker.example:{port}", f"127.0.0.1.attacker.example:{port}",
                 f"localhost.attacker.example:{port}"):
        assert get(service, host) == 400, host
        assert get(service, host, "/ui") == 400, host
        start = httpx.post(f"{service.url}/orchestrate/stream", headers={"Host": host}, timeout=30,
                           json={"taskId": "t", "clientId": "c", "projectId": "p", "query": "/run touch PWNED"})
        assert start.status_code == 400 and "invalid host header" in start.text.lower(), (host, start.text)
    for host in ("localhost", f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", f"LOCALHOST:{port}"):
        assert get(service, host) == 200, host


def test_allowed_hosts_adds_names(service_factory: Any) -> None:
    service = service_factory(allowed_hosts="jervis.test").start()
    assert get(service, f"jervis.test:{service.port}") == 200
    assert get(service, f"127.0.0.1:{service.port}") == 200
    assert get(service, f"other.test:{service.port}") == 400


def test_the_services_own_clients_still_pass(service_factory: Any) -> None:
    """The terminal client (its service URL) and Claude Code on the local runner (the service's
    `/v1/messages` at `service_url`, what the runner sets as ANTHROPIC_BASE_URL)."""
    service = service_factory().start()
    with ServiceClient(service.url) as client:
        assert client.health().status in ("ok", "degraded")
    agent_base = service_url(Settings(host="127.0.0.1", port=service.port))
    counted = httpx.post(f"{agent_base}/v1/messages/count_tokens", timeout=30,
                         json={"model": "test-model", "messages": [{"role": "user", "content": "hello"}]})
    assert counted.status_code == 200, counted.text
