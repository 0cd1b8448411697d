"""Optional API token (`API_TOKEN`): when set, every request must carry `Authorization: Bearer <token>`.

A pure ASGI middleware rather than a route dependency, so that nothing is left out: the SSE
stream, `/metrics`, the OpenAPI pages and unknown paths alike. The probes are the exception,
because Kubernetes cannot send a secret header: without the token `/health/live` and
`/health/ready` answer by status code with only `status`, and `/health` with only `status` and
`busy` (what Kotlin reads); their full reports need the token. The token is compared in constant
time. Off by default, because the Kotlin client sends no token.

The console (`/ui`) is a browser page, which cannot add a header to a page load or an
EventSource: its login form (`/ui/login`, open, throttled) checks the token and sets a cookie
holding a random session id (HttpOnly, SameSite=Strict), which this middleware takes in place of
the header while the session is good (`app/persistence/console_sessions.py`: expiry, idle
timeout, sign-out and token rotation end it). A request that changes something on the strength
of the cookie alone must also carry `X-Jervis-Console: 1`, a header no other site's page can send here without CORS.

Claude Code on the local runner talks to the service's `/v1/messages` (the local model behind
Anthropic's API) with a key the runner hands it: derived from the token (`agent_key`), sent as
`x-api-key` or as a bearer token, and good for those routes only; the agent never gets the token.

Wrong bearer tokens count against the same per-client throttle as the console's sign-in: once a
client has used up its wrong tokens for the minute, every bearer request it sends gets 429 with
`Retry-After`, the right token included (a guesser must not learn that a guess was right). A right
token costs no MongoDB read: the pod remembers which clients it refused (`_Refusals`); a wrong one
reads and counts in MongoDB, so the limit holds across replicas.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import Callable

from pymongo.errors import PyMongoError
from starlette.types import ASGIApp, Receive, Scope, Send

from app.llm.anthropic_messages import agent_key
from app.persistence.console_sessions import ConsoleSessions, ConsoleStore
from app.persistence.sign_in_throttle import client_key

log = logging.getLogger(__name__)

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
THROTTLED = "Too many wrong API tokens from your address: try again in {wait} s"
SESSIONS_UNAVAILABLE = "The console's sessions cannot be checked (MongoDB does not answer): try again shortly"
_STATE_KEY = "jervis_authenticated"


class _Refusals:
    """Clients this pod refused for wrong tokens, until when: checked for every bearer request
    without a store read. Bounded: expired entries go at each refusal, and past `limit` clients
    the oldest entries go first."""

    def __init__(self, limit: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        self._until: dict[str, float] = {}
        self._limit = limit
        self._clock = clock

    def wait(self, client: str) -> int | None:
        until = self._until.get(client)
        if until is None:
            return None
        left = until - self._clock()
        if left <= 0:
            del self._until[client]
            return None
        return max(1, round(left))

    def refuse(self, client: str, seconds: int) -> None:
        now = self._clock()
        for key in [k for k, until in self._until.items() if until <= now]:
            del self._until[key]
        while len(self._until) >= self._limit:
            del self._until[next(iter(self._until))]
        self._until[client] = now + seconds


class ApiTokenMiddleware:
    def __init__(self, app: ASGIApp, token: Callable[[Scope], str | None],
                 console: Callable[[Scope], ConsoleStore | None]) -> None:
        """`token(scope)`: the configured token, or None when none is; `console(scope)`: the console's
        sessions and the sign-in throttle (both read per request, because the lifespan builds them
        after the middleware)."""
        self._app = app
        self._token = token
        self._console = console
        self._refusals = _Refusals()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self._app(scope, receive, send)
            return
        token = self._token(scope)
        console = self._console(scope) if token is not None else None
        bearer = token is not None and _bearer(scope)
        client = client_key((scope.get("client") or (None,))[0]) if bearer else ""
        if bearer and (wait := self._refusals.wait(client)) is not None:
            await _throttled(scope, send, wait)
            return
        try:
            authenticated = token is None or await _authenticated(scope, token,
                                                                 console.sessions if console else None)
        except PyMongoError:  # a cookie that cannot be checked now: neither accepted nor sent to sign in again
            await _json(send, 503, SESSIONS_UNAVAILABLE, [(b"retry-after", b"5")])
            return
        if (not authenticated and bearer and console is not None
                and (wait := await self._count_wrong(console, client)) is not None):
            await _throttled(scope, send, wait)
            return
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
            await _json(send, 401, UNAUTHORIZED, [(b"www-authenticate", b'Bearer realm="jervis-orchestrator"')])


    async def _count_wrong(self, console: ConsoleStore, client: str) -> int | None:
        """Counts a wrong bearer token; the seconds to wait when the client has used up its tries.
        A store that does not answer leaves the 401 (logged: the count is then lost, not the refusal)."""
        try:
            wait = await console.throttle.refused_for(client)
            if wait is None:  # as at the console's sign-in: the tenth wrong token still gets its 401
                await console.throttle.wrong(client)
        except PyMongoError as exc:
            log.warning("a wrong API token from %s could not be counted (MongoDB: %s)", client, exc)
            return None
        if wait is not None:
            self._refusals.refuse(client, wait)
            log.warning("API tokens from %s refused for %d s: too many wrong ones", client, wait)
        return wait


def _bearer(scope: Scope) -> bool:
    """Whether the request presents a bearer token (or the agents' key) to be checked."""
    headers = dict(scope.get("headers") or ())
    scheme, _, credentials = headers.get(b"authorization", b"").partition(b" ")
    return bool(scheme.lower() == b"bearer" and credentials.strip()) or (
        scope.get("path") in AGENT_PATHS and b"x-api-key" in headers)


async def _throttled(scope: Scope, send: Send, wait: int) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": "Too many wrong API tokens"})
        return
    await _json(send, 429, THROTTLED.format(wait=wait), [(b"retry-after", str(wait).encode())])


async def _json(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


async def _authenticated(scope: Scope, token: str, sessions: ConsoleSessions | None) -> bool:
    """The bearer header carries the token, or the console's cookie a good session's id (with the
    console's header on a request that changes something, checked first: no lookup for a refusal)."""
    headers = dict(scope.get("headers") or ())
    scheme, _, credentials = headers.get(b"authorization", b"").partition(b" ")
    if scope.get("path") in AGENT_PATHS:
        presented = headers.get(b"x-api-key") or (credentials.strip() if scheme.lower() == b"bearer" else b"")
        if presented and hmac.compare_digest(presented, agent_key(token).encode()):
            return True
    if scheme.lower() == b"bearer" and credentials.strip():
        return hmac.compare_digest(credentials.strip(), token.encode())
    cookie = session_cookie(headers.get(b"cookie", b""))
    if cookie is None or sessions is None:
        return False
    if scope.get("method", "GET") not in SAFE_METHODS and headers.get(CONSOLE_HEADER) != b"1":
        return False
    return await sessions.valid(cookie, token)


def session_cookie(header: bytes) -> str | None:
    """The console's session id from a `Cookie` header."""
    for part in header.split(b";"):
        key, _, value = part.strip().partition(b"=")
        if key == CONSOLE_COOKIE.encode() and value:
            return value.decode(errors="replace")
    return None


def console_store(scope: Scope) -> ConsoleStore | None:
    """The serving app's console sessions and sign-in throttle (None before the lifespan built them)."""
    store = getattr(getattr(scope["app"].state, "services", None), "console", None)
    return store if isinstance(store, ConsoleStore) else None


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
