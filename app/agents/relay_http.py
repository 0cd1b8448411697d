"""Just enough HTTP/1.1 for the relay's two HTTP-aware routes: the service's own API, where each
request on a connection is checked against the paths allowed (`POST /v1/messages`), and the
CONNECT proxy, whose one request names the host:port to open.

The request head is read whole (bounded); its body is forwarded as it arrives, by its
`Content-Length` or chunk by chunk, so the next request on a kept-alive connection is checked
too. Anything ambiguous is refused rather than guessed: both `Content-Length` and
`Transfer-Encoding`, two lengths, a coding other than `chunked`, an absolute or `*` target, a
protocol upgrade (after which the bytes would no longer be requests the relay could read).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

#: The longest request head read (request line and headers).
HEAD_LIMIT = 64 * 1024
#: Body bytes forwarded per read.
CHUNK = 64 * 1024
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class RefusedRequest(ValueError):
    """A request the relay does not forward; `status` is what the client is answered."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True)
class RequestHead:
    method: str
    target: str
    raw: bytes
    """The head as received, forwarded unchanged."""
    length: int | None
    """The body's `Content-Length`; None with `chunked` (0 when neither is given)."""

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


async def read_head(reader: asyncio.StreamReader) -> RequestHead | None:
    """The next request head on the connection; None when the client closed it between requests.
    Raises RefusedRequest for a malformed or ambiguous one."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise RefusedRequest(400, "the request ended inside its head") from exc
    except asyncio.LimitOverrunError as exc:
        raise RefusedRequest(431, f"a request head over {HEAD_LIMIT} bytes") from exc
    lines = raw.decode("latin-1").split("\r\n")
    request_line = lines[0].split(" ")
    if len(request_line) != 3 or not _TOKEN.fullmatch(request_line[0]) \
            or request_line[2] not in ("HTTP/1.1", "HTTP/1.0"):
        raise RefusedRequest(400, "a malformed request line")
    method, target, _ = request_line
    headers: dict[str, list[str]] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not _TOKEN.fullmatch(name):
            raise RefusedRequest(400, "a malformed header line")
        headers.setdefault(name.lower(), []).append(value.strip())
    return RequestHead(method, target, raw, _length(headers, method))


def _length(headers: dict[str, list[str]], method: str) -> int | None:
    if "upgrade" in headers or any("upgrade" in value.lower() for value in headers.get("connection", [])):
        raise RefusedRequest(403, "a protocol upgrade")
    codings = headers.get("transfer-encoding")
    lengths = headers.get("content-length")
    if codings is not None:
        if lengths is not None:
            raise RefusedRequest(400, "both Content-Length and Transfer-Encoding")
        if [value.lower() for value in codings] != ["chunked"]:
            raise RefusedRequest(501, "a transfer coding other than chunked")
        return None
    if lengths is None:
        return 0
    if len(set(lengths)) != 1 or not lengths[0].isdigit() or len(lengths[0]) > 18:
        raise RefusedRequest(400, "an invalid Content-Length")
    return int(lengths[0])


async def forward_body(head: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy the request's body from `reader` to `writer` as it arrives (nothing is gathered first)."""
    if head.length is not None:
        await _copy(reader, writer, head.length)
        return
    while True:  # chunked: size line, data, CRLF … the last chunk (0), trailers, an empty line
        line = await _line(reader)
        writer.write(line)
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError as exc:
            raise RefusedRequest(400, "a malformed chunk size") from exc
        if size < 0:
            raise RefusedRequest(400, "a malformed chunk size")
        if size == 0:
            while (trailer := await _line(reader)) != b"\r\n":
                writer.write(trailer)
            writer.write(b"\r\n")
            await writer.drain()
            return
        await _copy(reader, writer, size)
        if (end := await reader.readexactly(2)) != b"\r\n":
            raise RefusedRequest(400, "a chunk without its CRLF")
        writer.write(end)


async def _line(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.readuntil(b"\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
        raise RefusedRequest(400, "a truncated chunked body") from exc


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, count: int) -> None:
    while count > 0:
        data = await reader.read(min(CHUNK, count))
        if not data:
            raise RefusedRequest(400, "the body ended before its length")
        writer.write(data)
        await writer.drain()
        count -= len(data)


def connect_target(head: RequestHead) -> tuple[str, int]:
    """The host and port a CONNECT request names; RefusedRequest for anything else."""
    if head.method != "CONNECT":
        raise RefusedRequest(405, "this proxy only opens tunnels (CONNECT)")
    host, sep, port = head.target.rpartition(":")
    host = host.strip("[]").lower()
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65_536:
        raise RefusedRequest(400, "a CONNECT target that is not host:port")
    return host, int(port)


def refusal(status: int, reason: str) -> bytes:
    """The answer to a refused request; the connection is closed after it."""
    body = f"refused by the agent sandbox's relay: {reason}\n".encode()
    return (f"HTTP/1.1 {status} Refused\r\ncontent-type: text/plain; charset=utf-8\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode() + body
