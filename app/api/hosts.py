"""The Host check: a request naming a host the service does not answer to gets 400 before anything else.

Against DNS rebinding: a page on a name its author controls re-points that name at 127.0.0.1 and
then talks to the loopback service as its own origin; the browser still sends the page's name as
`Host`. Which names pass is `app/runtime/listen.py`'s `allowed_host_names` (loopback names, the
listen address, `ALLOWED_HOSTS`; every name beyond loopback without `ALLOWED_HOSTS`).

A pure ASGI middleware, outermost, so no route, the token check and the console included, sees a
refused request. Starlette's `TrustedHostMiddleware` is not used: it cuts the port at the first
colon, which turns `[::1]:8090` into `[` and refuses the IPv6 loopback.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from app.runtime.listen import host_name

INVALID_HOST = "Invalid Host header: this service does not answer to that name (ALLOWED_HOSTS)"


class HostCheckMiddleware:
    """400 for an HTTP request, and a closed WebSocket, whose Host is not in `allowed` (None: any)."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str] | None) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.allowed is None or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        header = next((value for key, value in scope["headers"] if key == b"host"), b"")
        if host_name(header.decode("latin-1")) in self.allowed:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        payload = json.dumps({"detail": INVALID_HOST}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
