"""Optional API token (`API_TOKEN`): when set, every request must carry `Authorization: Bearer <token>`.

A pure ASGI middleware rather than a route dependency, so that nothing is left out: the SSE
stream, `/metrics`, the OpenAPI pages and unknown paths alike. The probes are the exception,
because Kubernetes cannot send a secret header: without the token `/health/live` and
`/health/ready` answer by status code with only `status`, and `/health` with only `status` and
`busy` (what Kotlin reads); their full reports need the token. The token is compared in constant
time. Off by default, because the Kotlin client sends no token.

The console (`/ui`) is a browser page, which cannot add a header to a page load or an
EventSource: its login form (`/ui/login`, open) checks the token and sets a cookie holding a
key derived from it (HttpOnly, SameSite=Strict), which this middleware takes in place of the
header. A request that changes something on the strength of the cookie alone must also carry
`X-Jervis-Console: 1`, a header no other site's page can send here without CORS.

Claude Code on the local runner talks to the service's `/v1/messages` (the local model behind
Anthropic's API) with a key the runner hands it: derived from the token (`agent_key`), sent as
`x-api-key` or as a bearer token, and good for those routes only; the agent never gets the token.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from app.llm.anthropic_messages import agent_key

#: Reachable without the token (the probes, the console's login); `/health` too, reduced (see `is_authenticated`).
OPEN_PATHS = frozenset({"/health/live", "/health/ready", "/health", "/ui/login", "/ui/logout"})
#: The console's static files (no data in them): the login page needs its stylesheet.
OPEN_PREFIX = "/ui/assets/"
#: Routes that also take the agents' key (`agent_key`) in place of the token.
AGENT_PATHS = frozenset({"/v1/messages", "/v1/messages/count_tokens"})
CONSOLE_COOKIE = "jervis_console"
CONSOLE_HEADER = b"x-jervis-console"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
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
        authenticated = token is None or _authenticated(scope, token)
        scope.setdefault("state", {})[_STATE_KEY] = authenticated
        path = str(scope.get("path") or "")
        if authenticated or (scope["type"] == "http" and (path in OPEN_PATHS or path.startswith(OPEN_PREFIX))):
            await self._app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "API token required"})
        elif scope.get("method") == "GET" and (path == "/ui" or path.startswith("/ui/")):
            await send({"type": "http.response.start", "status": 303, "headers": [
                (b"location", b"/ui/login"), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
        else:
            body = json.dumps({"detail": UNAUTHORIZED}).encode()
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="jervis-orchestrator"')]})
            await send({"type": "http.response.body", "body": body})


def _authenticated(scope: Scope, token: str) -> bool:
    """The bearer header carries the token, or the console's cookie its key (with the console's
    header on a request that changes something)."""
    headers = dict(scope.get("headers") or ())
    scheme, _, credentials = headers.get(b"authorization", b"").partition(b" ")
    if scope.get("path") in AGENT_PATHS:
        presented = headers.get(b"x-api-key") or (credentials.strip() if scheme.lower() == b"bearer" else b"")
        if presented and hmac.compare_digest(presented, agent_key(token).encode()):
            return True
    if scheme.lower() == b"bearer" and credentials.strip():
        return hmac.compare_digest(credentials.strip(), token.encode())
    cookie = _cookie(headers.get(b"cookie", b""), CONSOLE_COOKIE)
    if cookie is None or not hmac.compare_digest(cookie, console_key(token).encode()):
        return False
    return scope.get("method", "GET") in SAFE_METHODS or headers.get(CONSOLE_HEADER) == b"1"


def _cookie(header: bytes, name: str) -> bytes | None:
    for part in header.split(b";"):
        key, _, value = part.strip().partition(b"=")
        if key == name.encode() and value:
            return value
    return None


def console_key(token: str) -> str:
    """What the console's cookie holds: derived from the token, so the cookie is not the token."""
    return hmac.new(token.encode(), b"jervis-console-session", hashlib.sha256).hexdigest()


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
