"""Request limits applied before a body reaches FastAPI and pydantic (`docs/api.md`, limits).

A body is read here, counting bytes as they arrive: past the route's limit the request is
answered 413 at once, so a 10 MB body is never held in memory (a `Content-Length` above the
limit is refused before a byte is read). A body within the limit is then scanned for its JSON
nesting depth, since a deeply nested value would pass validation (`environment` is free-form)
and fail only when the checkpoint is written (BSON refuses depth > 100), and Python's JSON parser
itself gives up near depth 1000. What passes is replayed to the app unchanged.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from fastapi.exceptions import RequestValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.config import Settings

_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
#: Objects and arrays alike: `{` → `[`, `}` → `]`.
_ONE_KIND = bytes.maketrans(b"{}", b"[]")
_SCAN_CHUNK = 1 << 20
_THREAD_SCAN_BYTES = 256 << 10
#: How much of a refused body is read and dropped, and for how long, before the 413 is sent.
DRAIN_BYTES = 32 << 20
DRAIN_SECONDS = 10.0


@dataclass(frozen=True)
class RequestLimits:
    """Per-route body size and the JSON depth every body must keep to."""

    max_body_bytes: int
    bulk_body_bytes: int
    bulk_prefixes: tuple[str, ...]
    max_json_depth: int

    @classmethod
    def from_settings(cls, settings: Settings) -> RequestLimits:
        return cls(max_body_bytes=settings.max_body_bytes, bulk_body_bytes=settings.max_bulk_body_bytes,
                   bulk_prefixes=("/correction/", "/internal/compress-chat"), max_json_depth=settings.max_json_depth)

    def body_limit(self, path: str) -> tuple[int, str]:
        """The route's body limit in bytes, and the setting that sets it."""
        if path.startswith(self.bulk_prefixes):
            return self.bulk_body_bytes, "MAX_BULK_BODY_BYTES"
        return self.max_body_bytes, "MAX_BODY_BYTES"


def json_depth_exceeds(body: bytes, limit: int) -> bool:
    """True when objects and arrays nest deeper than `limit` (a top-level object is depth 1).

    Only C-speed byte operations, linear in the body and bounded in memory whatever it holds
    (a regular expression over strings can go quadratic on crafted escapes): escapes are dropped,
    the text outside strings keeps only its brackets, and then each pass removes every innermost
    `[]` pair, so a structure `limit` deep is gone after `limit` passes (a run of more than
    `limit` openers ends it early). What survives is a deeper structure, or brackets that match
    nothing (invalid JSON: too deep only when more than `limit` of them are open; the parser
    reports the rest)."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    skeleton = _brackets_outside_strings(body).translate(_ONE_KIND)
    too_deep = b"[" * (limit + 1)  # that many opened in a row nest that deep, whatever follows
    for _ in range(limit):
        if too_deep in skeleton:
            return True
        reduced = skeleton.replace(b"[]", b"")
        if len(reduced) == len(skeleton):
            break
        skeleton = reduced
    return b"[]" in skeleton or skeleton.count(b"[") > limit


def _brackets_outside_strings(body: bytes) -> bytes:
    """The brackets of `body` that are structure, not text. Escaped backslashes go first, then
    escaped quotes, so every quote left opens or closes a string; the text is then split on
    quotes a chunk at a time, keeping the parts outside strings."""
    text = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    kept: list[bytes] = []
    inside = False
    for start in range(0, len(text), _SCAN_CHUNK):
        parts = text[start:start + _SCAN_CHUNK].split(b'"')
        kept.append(b"".join(parts[1::2] if inside else parts[::2]).translate(None, _NOT_BRACKETS))
        inside ^= len(parts) % 2 == 0  # an odd number of quotes in the chunk flips the state
    return b"".join(kept)


class RequestLimitsMiddleware:
    """Pure ASGI (not `BaseHTTPMiddleware`): it sees each body chunk as it arrives."""

    def __init__(self, app: ASGIApp, limits: RequestLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, setting = self.limits.body_limit(scope["path"])
        declared = _content_length(scope)
        try:
            body = None if declared is not None and declared > limit else await _read_within(receive, limit)
        except _ClientGone:
            return
        if body is None:
            if declared is None or declared <= limit + DRAIN_BYTES:
                await _drain(receive)
            await _refuse(send, 413, f"request body larger than {limit} bytes ({setting})")
            return
        depth = self.limits.max_json_depth
        if await _too_deep(body, depth):
            message = f"JSON nested deeper than {depth} levels (MAX_JSON_DEPTH)"
            await _refuse(send, 422, f"body: {message}",
                          errors=[{"loc": ["body"], "msg": message, "type": "json_too_deep"}])
            return
        await self.app(scope, _replay(body, receive), send)


async def _too_deep(body: bytes, depth: int) -> bool:
    """A large body (a meeting's transcript) is scanned off the event loop, which keeps serving."""
    if len(body) > _THREAD_SCAN_BYTES:
        return await asyncio.to_thread(json_depth_exceeds, body, depth)
    return json_depth_exceeds(body, depth)


class _ClientGone(Exception):
    """The client disconnected before its body was complete: nothing to answer."""


async def _read_within(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None as soon as it passes `limit` (what was read is dropped at once)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise _ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _drain(receive: Receive) -> None:
    """Read and drop the rest of a refused body, so that a client still sending it reads the 413
    instead of a reset connection (the server closes a connection with unread data). Bounded in
    bytes and time: past either the connection is just closed."""
    discarded = 0
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            while discarded <= DRAIN_BYTES:
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body", False):
                    return
                discarded += len(message.get("body", b""))
    except TimeoutError:
        return


def text_limit_errors(limit: int, **fields: str | None) -> list[dict[str, object]]:
    """Pydantic-shaped errors for the free-text fields longer than `limit` characters."""
    return [{"loc": ("body", name), "type": "string_too_long",
             "msg": f"String should have at most {limit} characters, got {len(value)} (MAX_TEXT_CHARS)"}
            for name, value in fields.items() if value is not None and len(value) > limit]


def check_text_lengths(limit: int, **fields: str | None) -> None:
    """Raise the app's readable 422 when a free-text field is longer than `limit` characters
    (a setting, so not expressible in the pydantic model)."""
    errors = text_limit_errors(limit, **fields)
    if errors:
        raise RequestValidationError(errors)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body in one message, then the real channel (a streaming response waits on it for the disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _refuse(send: Send, status: int, detail: str, *, errors: list[dict[str, object]] | None = None) -> None:
    """The app's error shape: `{"detail": …}`, and `errors` like a validation 422."""
    payload = json.dumps({"detail": detail, **({"errors": errors} if errors else {})}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})
