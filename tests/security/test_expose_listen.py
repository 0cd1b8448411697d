"""A client on the network without the token: the service must not be open to it by default.

The service runs code for whoever can start a run. Started the ways people start it (the image's
command, `scripts/run.sh`'s `python -m app.dev`) on every interface without `API_TOKEN`, it must
refuse before it binds, saying why; with the token, or with the explicit `ALLOW_NO_TOKEN=true`
(warned), it starts. Each launch binds a free port and is stopped; requests go to loopback only.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.security.expose_support import LAUNCHERS, accepts, launch

__all__ = ["launch"]  # the fixture

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_every_interface_without_a_token_is_refused_before_anything_listens(launch: Any, launcher: str) -> None:
    service = launch(launcher, host="0.0.0.0")
    code = service.wait_listening_or_exit()
    assert code is not None, f"it listens on every interface without API_TOKEN:\n{service.output()[-2000:]}"
    assert code != 0 and not accepts(service.port)
    assert "refusing to listen on 0.0.0.0" in service.output() and "without API_TOKEN" in service.output()


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_every_interface_with_a_token_starts_and_wants_it(launch: Any, launcher: str) -> None:
    service = launch(launcher, host="0.0.0.0", api_token="s3cret-token")
    assert service.wait_listening_or_exit() is None, service.output()[-3000:]
    assert httpx.get(f"{service.url}/runs", timeout=10).status_code == 401
    headers = {"Authorization": "Bearer s3cret-token"}
    assert httpx.get(f"{service.url}/health", headers=headers, timeout=30).json()["warnings"] == []


def test_without_a_token_only_when_asked_and_said_loudly(launch: Any) -> None:
    """ALLOW_NO_TOKEN=true (compose, the cluster behind its NetworkPolicy): it starts, says so in its
    log and in /health, and answers the loopback names only, so a page on a rebound name that
    reaches the published port gets 400 (DNS rebinding)."""
    service = launch("image", host="0.0.0.0", allow_no_token="true")
    assert service.wait_listening_or_exit() is None, service.output()[-3000:]
    health = httpx.get(f"{service.url}/health", timeout=30).json()
    assert any("WITHOUT an API_TOKEN" in warning for warning in health["warnings"])
    assert "WITHOUT an API_TOKEN" in service.output()
    rebound = httpx.post(f"{service.url}/orchestrate/stream", headers={"Host": f"attacker.example:{service.port}"},
                         json={"query": "x"}, timeout=10)
    assert rebound.status_code == 400
    assert httpx.get(f"http://localhost:{service.port}/health/live", timeout=10).status_code == 200
