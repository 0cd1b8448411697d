"""A local agent (or any loopback peer) claiming to be someone else with `X-Forwarded-For`.

Agents on the local runner share the service's host, so they connect from 127.0.0.1, which uvicorn
on its own trusts to forward a client's address (`FORWARDED_ALLOW_IPS` defaults to loopback). A
guesser of the API token could then give each guess a new address and never meet the sign-in
throttle. Started the way people start it, the service must count the real peer unless the peer
is a proxy named in `TRUSTED_PROXIES`.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.security.expose_support import LAUNCHERS, launch

__all__ = ["launch"]  # the fixture

pytestmark = pytest.mark.slow

TOKEN = "the-right-token"
SETTINGS = {"api_token": TOKEN, "console_sign_in_attempts": "2"}


def wrong_token(url: str, forwarded_for: str) -> int:
    headers = {"Authorization": "Bearer a-wrong-guess", "X-Forwarded-For": forwarded_for}
    return httpx.get(f"{url}/runs", headers=headers, timeout=30).status_code


def wrong_sign_in(url: str, forwarded_for: str) -> int:
    """A wrong token at the console's sign-in form (`/ui/login`)."""
    return httpx.post(f"{url}/ui/login", data={"token": "a-wrong-guess"}, headers={"X-Forwarded-For": forwarded_for},
                      timeout=30).status_code


def sign_in_cookie(url: str, **headers: str) -> str:
    """The Set-Cookie of a right sign-in (lower case)."""
    answer = httpx.post(f"{url}/ui/login", data={"token": TOKEN}, headers=headers, timeout=30)
    assert answer.status_code == 303, answer.text
    return answer.headers["set-cookie"].lower()


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_a_spoofed_forwarded_for_from_an_unnamed_peer_does_not_escape_the_throttle(launch: Any,
                                                                                    launcher: str) -> None:
    """Console sign-ins and bearer tokens count against one client, the real peer, whatever address
    each guess claims; nor does a claimed https make the cookie Secure."""
    service = launch(launcher, **SETTINGS)
    assert service.wait_listening_or_exit() is None, service.output()[-3000:]
    assert "; secure" not in sign_in_cookie(service.url, **{"X-Forwarded-Proto": "https"})
    answers = [wrong_sign_in(service.url, "203.0.113.1"), wrong_token(service.url, "203.0.113.2"),
               wrong_sign_in(service.url, "203.0.113.3"), wrong_token(service.url, "203.0.113.4")]
    assert answers == [401, 401, 429, 429], "each guess's new X-Forwarded-For was taken for a new client"


def test_a_named_proxy_is_believed(launch: Any) -> None:
    service = launch("image", trusted_proxies="127.0.0.1", **SETTINGS)
    assert service.wait_listening_or_exit() is None, service.output()[-3000:]
    assert "; secure" in sign_in_cookie(service.url, **{"X-Forwarded-Proto": "https"})
    assert [wrong_sign_in(service.url, f"198.51.100.{n}") for n in range(1, 4)] == [401, 401, 401]
    assert [wrong_token(service.url, "198.51.100.3") for _ in range(2)] == [401, 429]  # that client's own count


def test_uvicorns_own_variable_no_longer_trusts_anyone(launch: Any) -> None:
    """`FORWARDED_ALLOW_IPS` inherited from an old configuration is ignored, and said to be."""
    service = launch("image", forwarded_allow_ips="127.0.0.1", **SETTINGS)
    assert service.wait_listening_or_exit() is None, service.output()[-3000:]
    assert [wrong_token(service.url, f"192.0.2.{n}") for n in range(1, 4)] == [401, 401, 429]
    assert "FORWARDED_ALLOW_IPS is ignored" in service.output()
