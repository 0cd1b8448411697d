"""Optional API token (`API_TOKEN`): when set, every request must carry `Authorization: Bearer <token>`.

A pure ASGI middleware rather than a route dependency, so that nothing is left out: the SSE
stream, `/metrics`, the OpenAPI pages and unknown paths alike. The probes are the exception,
because Kubernetes cannot send a secret header: without the token `/health/live` and
`/health/ready` answer by status code with only `status`, and `/health` with only `status` and
`busy` (what Kotlin reads); their full reports need the token. The token is compared in constant
time. Off by default, because the Kotlin client sends no token.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

#: Reachable without the token (the probes); `/health` too, reduced (see `is_authenticated`).
OPEN_PATHS = frozenset({"/health/live", "/health/ready", "/health"})
UNAUTHORIZED = ("Missing or wrong API token: send 'Authorization: Bearer <API_TOKEN>' "
                "(the terminal client sends JERVIS_API_TOKEN)")
_STATE_KEY = "jervis_authenticated"


class ApiTokenMiddleware:
    def __init__(self, app: ASGIApp, token: Callable[[Scope], str | None]) -> None:
        """`token(scope)`: the configured token, or None when none is (read per request, because
        the settings are built in the lifespan, after the middleware)."""
        self._app = app
        self._token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self._app(scope, receive, send)
            return
        token = self._token(scope)
        presented = _presented(scope)
        authenticated = token is None or (presented is not None and hmac.compare_digest(presented, token.encode()))
        scope.setdefault("state", {})[_STATE_KEY] = authenticated
        if authenticated or (scope["type"] == "http" and scope.get("path") in OPEN_PATHS):
            await self._app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "API token required"})
        else:
            body = json.dumps({"detail": UNAUTHORIZED}).encode()
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="jervis-orchestrator"')]})
            await send({"type": "http.response.body", "body": body})


def _presented(scope: Scope) -> bytes | None:
    """The bearer token of the request's Authorization header, or None."""
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            scheme, _, credentials = value.partition(b" ")
            return credentials.strip() if scheme.lower() == b"bearer" and credentials.strip() else None
    return None


def is_authenticated(state: object) -> bool:
    """Whether the request carried the token (or none is configured): `request.state` of a route."""
    return bool(getattr(state, _STATE_KEY, True))


def configured_token(scope: Scope) -> str | None:
    """`API_TOKEN` of the serving app: from the services the lifespan built, else the settings the
    app was created with."""
    state = scope["app"].state
    services = getattr(state, "services", None)
    settings = services.settings if services is not None else getattr(state, "settings", None)
    secret = settings.api_token if settings is not None else None
    return secret.get_secret_value() if secret is not None else None
