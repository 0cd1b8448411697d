"""A client on the network against a service started the wrong way: `uvicorn app.main:app --host
0.0.0.0` with no `API_TOKEN` and no `HOST`. uvicorn never tells the app where it listens, so the
start-up refusal cannot see it; each request says which local address it reached
(`scope["server"]`). Played through the ASGI interface (tests never leave loopback): the request
arrives on a LAN address and names `localhost` as its Host, as a client that knows the Host check
would. It must get 403 before any route; with a token, or `ALLOW_NO_TOKEN`, it is served.
"""

from __future__ import annotations

import httpx
import pytest
from pydantic import SecretStr

from app.config import Settings
from app.main import create_app

LAN = "http://192.0.2.10:8090"  # the local address the request reached (TEST-NET-1, never routed)


async def get(settings: Settings, path: str, base: str = LAN) -> httpx.Response:
    transport = httpx.ASGITransport(app=create_app(settings))
    async with httpx.AsyncClient(transport=transport, base_url=base, headers={"Host": "localhost"}) as http:
        return await http.get(path)


@pytest.mark.parametrize("path", ["/health/live", "/health", "/runs", "/ui", "/docs"])
async def test_without_a_token_nothing_answers_beyond_loopback(path: str) -> None:
    answer = await get(Settings(host="127.0.0.1", api_token=None), path)
    assert answer.status_code == 403 and "loopback only" in answer.json()["detail"]


async def test_loopback_is_served_and_a_token_or_the_explicit_choice_opens_the_network() -> None:
    assert (await get(Settings(api_token=None), "/health/live", base="http://127.0.0.1:8090")).status_code == 200
    assert (await get(Settings(api_token=None), "/health/live", base="http://[::1]:8090")).status_code == 200
    assert (await get(Settings(api_token=SecretStr("t")), "/health/live")).status_code == 200
    assert (await get(Settings(api_token=SecretStr("t")), "/runs")).status_code == 401
    assert (await get(Settings(api_token=None, allow_no_token=True), "/health/live")).status_code == 200
