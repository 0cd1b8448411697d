"""The relay (app/agents/relay.py, relay_http.py) on its Unix sockets, without a sandbox: bytes pass
as they come, the service's API passes only as `POST /v1/messages`, the CONNECT proxy opens only
its allowed host:ports, and ambiguous requests are refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.agents.relay import AgentRelay
from app.agents.relay_routes import SERVICE_PATHS, Route, StepRoutes


class Upstream:
    """A loopback TCP server that records what it got and answers with what the test releases."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.answers: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1

        async def collect() -> None:
            while data := await reader.read(65536):
                self.received += data

        collector = asyncio.create_task(collect())
        while (answer := await self.answers.get()) is not None:
            writer.write(answer)
            await writer.drain()
        writer.close()
        collector.cancel()

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self.answers.put(None)


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    server = Upstream()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def relay(tmp_path: Path) -> AsyncIterator[AgentRelay]:
    relay = AgentRelay(tmp_path / "relay")
    await relay.start()
    try:
        yield relay
    finally:
        await relay.stop()


async def _open(relay: AgentRelay, route: Route) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    lease = await relay.open("step", StepRoutes((route,)))
    return await asyncio.open_unix_connection(str(lease.directory / f"{route.name}.sock"))


async def test_a_streamed_answer_passes_piece_by_piece_before_the_upstream_is_done(
        relay: AgentRelay, upstream: Upstream) -> None:
    reader, writer = await _open(relay, Route("r0", 1, "tcp", ("127.0.0.1", upstream.port)))
    writer.write(b"hello")
    await writer.drain()
    await upstream.answers.put(b"first piece")
    assert await asyncio.wait_for(reader.read(100), 5) == b"first piece"  # the upstream has not ended
    await upstream.answers.put(b"second piece")
    assert await asyncio.wait_for(reader.read(100), 5) == b"second piece"
    await upstream.answers.put(None)
    assert await asyncio.wait_for(reader.read(100), 5) == b""
    assert bytes(upstream.received) == b"hello"
    writer.close()


def _service_route(port: int) -> Route:
    return Route("r0", 1, "http", ("127.0.0.1", port), paths=SERVICE_PATHS)


async def test_the_service_route_lets_messages_through_and_refuses_another_path_on_the_same_connection(
        relay: AgentRelay, upstream: Upstream) -> None:
    reader, writer = await _open(relay, _service_route(upstream.port))
    writer.write(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}")
    await writer.drain()
    await upstream.answers.put(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
    assert await asyncio.wait_for(reader.read(100), 5) == b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
    writer.write(b"GET /api/runs HTTP/1.1\r\nhost: x\r\n\r\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 5)
    assert answer.startswith(b"HTTP/1.1 403 ") and b"GET /api/runs" in answer
    assert bytes(upstream.received) == b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}"


@pytest.mark.parametrize("request_bytes", [
    b"GET /v1/messages HTTP/1.1\r\nhost: x\r\n\r\n",
    b"POST /v1/messages/../../api/runs HTTP/1.1\r\nhost: x\r\n\r\n",
    b"POST http://127.0.0.1/api/runs HTTP/1.1\r\nhost: x\r\n\r\n",
    b"POST /v1/messages HTTP/1.1\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST /v1/messages HTTP/1.1\r\ncontent-length: 5\r\ncontent-length: 40\r\n\r\n",
    b"POST /v1/messages HTTP/1.1\r\nupgrade: h2c\r\nconnection: upgrade\r\n\r\n",
    b"POST /v1/messages HTTP/1.1\r\ntransfer-encoding: gzip, chunked\r\n\r\n",
])
async def test_the_service_route_refuses_what_it_cannot_read_unambiguously(
        relay: AgentRelay, upstream: Upstream, request_bytes: bytes) -> None:
    reader, writer = await _open(relay, _service_route(upstream.port))
    writer.write(request_bytes)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 5)
    assert answer.split(b" ")[1] in (b"400", b"403", b"501")
    assert bytes(upstream.received) == b""


async def test_a_chunked_body_is_followed_to_its_end_and_the_next_request_is_checked(
        relay: AgentRelay, upstream: Upstream) -> None:
    reader, writer = await _open(relay, _service_route(upstream.port))
    body = b"4\r\nabcd\r\n0\r\n\r\n"
    hidden = b"GET /api/runs HTTP/1.1\r\nhost: x\r\n\r\n"  # smuggled after the body: a request of its own
    writer.write(b"POST /v1/messages HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n" + body + hidden)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 5)
    assert answer.startswith(b"HTTP/1.1 403 ")
    assert bytes(upstream.received) == b"POST /v1/messages HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n" + body


async def test_the_connect_proxy_opens_only_its_allowed_targets(relay: AgentRelay, upstream: Upstream) -> None:
    route = Route("r0", 1, "connect", allowed=frozenset({("127.0.0.1", upstream.port)}))
    lease = await relay.open("step", StepRoutes((route,)))
    path = str(lease.directory / "r0.sock")
    for target in (f"127.0.0.1:{upstream.port + 1}", "localhost:27017", f"[::1]:{upstream.port}"):
        reader, writer = await asyncio.open_unix_connection(path)
        writer.write(f"CONNECT {target} HTTP/1.1\r\nhost: {target}\r\n\r\n".encode())
        assert (await asyncio.wait_for(reader.read(), 5)).startswith(b"HTTP/1.1 403 "), target
        writer.close()
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(b"GET http://127.0.0.1/ HTTP/1.1\r\nhost: x\r\n\r\n")
    assert (await asyncio.wait_for(reader.read(), 5)).startswith(b"HTTP/1.1 405 ")
    writer.close()
    assert upstream.connections == 0

    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(f"CONNECT 127.0.0.1:{upstream.port} HTTP/1.1\r\nhost: x\r\n\r\n".encode())
    assert await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5) == b"HTTP/1.1 200 Connection Established\r\n\r\n"
    writer.write(b"tls bytes")
    await upstream.answers.put(b"server bytes")
    assert await asyncio.wait_for(reader.read(100), 5) == b"server bytes"
    writer.close()


async def test_a_closed_lease_leaves_no_socket_and_a_reopened_step_binds_again(
        relay: AgentRelay, upstream: Upstream) -> None:
    routes = StepRoutes((Route("r0", 1, "tcp", ("127.0.0.1", upstream.port)),))
    first = await relay.open("step", routes)
    again = await relay.open("step", routes)  # a restarted service re-attaching to the same step
    assert again.directory == first.directory and (again.directory / "r0.sock").exists()
    await relay.release(again)
    assert not again.directory.exists()
