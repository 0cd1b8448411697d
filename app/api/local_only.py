"""Without `API_TOKEN` the service answers on loopback only, however uvicorn was started.

The launchers refuse to listen beyond loopback without a token (`app/runtime/listen.py`), but a
bare `uvicorn app.main:app --host 0.0.0.0` never tells the app where it listens. Each connection
does: `scope["server"]` is the local address the request arrived on. Without a token (and without
`ALLOW_NO_TOKEN`), a request that arrived on any address but loopback gets 403 before any route,
so a service started the wrong way is still not open to the network. A Unix socket (no address)
is local by nature and passes.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from app.runtime.listen import is_loopback

REFUSED = ("This service has no API_TOKEN, so it answers on loopback only: set API_TOKEN (or ALLOW_NO_TOKEN=true) "
           "to serve this address")


class LoopbackOnlyMiddleware:
    """403 for an HTTP request (a closed WebSocket) that arrived on a non-loopback local address."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server") if scope["type"] in ("http", "websocket") else None
        if not server or is_loopback(str(server[0])):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        payload = json.dumps({"detail": REFUSED}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 403, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
