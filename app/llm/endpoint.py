"""Whether a model server still accepts TCP connections: a bare connect, no HTTP.

A local server that serves one request at a time (llama-cpp-python's) accepts the connection of
every other client at once but answers none of them until its generation ends, so "accepts
connections" is what tells a busy server from a gone one: the health probe and a call waiting
for its turn both ask it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


def host_port(api_base: str) -> tuple[str, int]:
    """The host and port an API base URL connects to (the scheme's port when none is given)."""
    parts = urlsplit(api_base if "://" in api_base else f"http://{api_base}")
    host = parts.hostname
    if not host:
        raise ValueError(f"no host in {api_base!r}")
    return host, parts.port or _DEFAULT_PORTS.get(parts.scheme, 80)


async def connect_seconds(api_base: str, timeout: float) -> float:
    """Seconds a bare TCP connect to the API base took (then closed unused); `OSError` when it is
    refused or the name does not resolve, `TimeoutError` after `timeout`."""
    host, port = host_port(api_base)
    started = time.perf_counter()
    async with asyncio.timeout(timeout):
        _, writer = await asyncio.open_connection(host, port)
    seconds = time.perf_counter() - started
    writer.close()
    with contextlib.suppress(OSError, TimeoutError):  # closing an unused connection is best effort
        await asyncio.wait_for(writer.wait_closed(), 1.0)
    return seconds
