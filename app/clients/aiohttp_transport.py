"""httpx's interface on aiohttp's connections, for the service's shared HTTP client.

Every node costs the service a progress push, and intake three KB lookups. httpx's own transport
(httpcore on anyio) spent ~3 ms of CPU on such a loopback request (headers and body in separate
writes, anyio's socket attributes read on every connection check), aiohttp ~1 ms: measured with
`bench/orchestration.py`, the shared client's requests took a tenth of the service's CPU. Callers
keep httpx: requests, responses, timeouts and exceptions are httpx's (a refused connection is
`httpx.ConnectError`, a timeout `httpx.TimeoutException`, any other transport failure
`httpx.TransportError`), so they cannot tell the transport apart.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import httpx

_CHUNK = 64 * 1024


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_chunked(_CHUNK):
                yield chunk
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise httpx.ReadTimeout(str(exc) or "read timed out", request=self._request) from exc
        except aiohttp.ClientError as exc:
            raise httpx.ReadError(str(exc), request=self._request) from exc

    async def aclose(self) -> None:
        self._response.release()


class AiohttpTransport(httpx.AsyncBaseTransport):
    """One aiohttp session (opened at the first request, in the running loop) for all requests."""

    def __init__(self, *, max_connections: int = 100) -> None:
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._max_connections)
            # Bodies come back as sent: httpx decodes them (Content-Encoding) as with its own transport.
            self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False)
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {})
        body = await request.aread()
        try:
            response = await self._open().request(
                request.method, str(request.url), headers=list(request.headers.multi_items()),
                data=body or None, allow_redirects=False,
                timeout=aiohttp.ClientTimeout(connect=timeout.get("pool"), sock_connect=timeout.get("connect"),
                                              sock_read=timeout.get("read")),
            )
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise httpx.TimeoutException(str(exc) or "timed out", request=request) from exc
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
        except aiohttp.ClientError as exc:
            raise httpx.TransportError(str(exc), request=request) from exc
        return httpx.Response(response.status, headers=list(response.raw_headers),
                              stream=_ResponseStream(response, request), request=request,
                              extensions={"http_version": b"HTTP/1.1"})

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
            await asyncio.sleep(0)  # lets aiohttp close the connections it released
