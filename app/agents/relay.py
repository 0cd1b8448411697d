"""The relay between sandboxed agents and the few endpoints each step may reach: the service owns
it, the agent's network namespace has nothing else.

Per step (`open`), one Unix socket per route (`relay_routes.Route`) in a directory of its own
under the service's private `root` (on DATA_ROOT, which the sandbox hides); the sandbox binds
that directory at `INSIDE` and the forwarder there (`relay_forwarder.py`) connects the agent's
loopback ports to those sockets. A connection to a socket is one connection upstream: bytes are
forwarded as they come (a streamed answer is never gathered), both ways, until both sides are
done. The service's own API is reached only through the HTTP-aware route (`relay_http`), which
checks every request on the connection; remote HTTPS hosts only through the CONNECT route, which
opens exactly the host:ports allowed.

The directory is named by the step's job, so a service that restarts and re-attaches to a
running agent binds its sockets again in the very directory the sandbox has bound (a directory
made anew would be another one, unseen inside): a lease whose step ends is closed with its
directory; one left running (the run suspended, the service stopping) keeps the directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import socket
from collections.abc import Awaitable, Callable
from hashlib import sha256
from pathlib import Path

from app.agents.confinement import SERVICE_DIR
from app.agents.relay_http import HEAD_LIMIT, RefusedRequest, connect_target, forward_body, read_head, refusal
from app.agents.relay_routes import Route, StepRoutes

log = logging.getLogger(__name__)

#: The relay's private sockets, under DATA_ROOT (hidden from every sandbox but for a step's own directory).
RELAY_DIR = SERVICE_DIR / "relay"
#: Where the sandbox sees a step's relay directory.
INSIDE = Path("/run/jervis-relay")
#: Bytes forwarded per read: whatever has arrived is sent on at once.
CHUNK = 64 * 1024
CONNECT_TIMEOUT_SECONDS = 10.0
#: The longest path `bind` takes for a Unix socket (108 with its terminating NUL).
SOCKET_PATH_LIMIT = 107

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class RelayLease:
    """One step's sockets: open while the step runs."""

    def __init__(self, key: str, directory: Path, routes: StepRoutes, servers: list[asyncio.Server]) -> None:
        self.key = key
        self.directory = directory
        self.routes = routes
        self._servers = servers

    async def close(self, *, keep_directory: bool = False) -> None:
        """Stop listening and remove the sockets; the directory too unless `keep_directory` (a
        sandbox still running has it bound: a later `open` must bind into this very directory)."""
        for server in self._servers:
            server.close()
        for server in self._servers:
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self._servers = []
        if keep_directory:
            _empty(self.directory)
        else:
            shutil.rmtree(self.directory, ignore_errors=True)


class AgentRelay:
    """The service's relay for sandboxed steps (started and stopped with the service)."""

    def __init__(self, root: Path, *, connect_timeout: float = CONNECT_TIMEOUT_SECONDS) -> None:
        self.root = root
        self._connect_timeout = connect_timeout
        self._leases: dict[str, RelayLease] = {}
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """The private root, readable by the service's user only."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.root, 0o700)

    async def stop(self) -> None:
        """Close every lease and every connection still open."""
        for lease in list(self._leases.values()):
            await lease.close(keep_directory=True)  # a sandbox may outlive the service
        self._leases.clear()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    def directory(self, key: str) -> Path:
        return self.root / sha256(key.encode()).hexdigest()[:16]

    async def open(self, key: str, routes: StepRoutes) -> RelayLease:
        """Bind the sockets of `routes` for the step `key` (a lease of that key still open is closed first)."""
        if (earlier := self._leases.pop(key, None)) is not None:
            await earlier.close()
        await self.start()
        directory = self.directory(key)
        directory.mkdir(mode=0o700, exist_ok=True)  # kept by a service that left the step running
        _empty(directory)
        servers: list[asyncio.Server] = []
        try:
            for route in routes.routes:
                servers.append(await asyncio.start_unix_server(
                    self._tracked(key, route, self._handler(key, route)), sock=_bound(directory, f"{route.name}.sock"),
                    limit=HEAD_LIMIT))
        except BaseException:
            await RelayLease(key, directory, routes, servers).close()
            raise
        lease = RelayLease(key, directory, routes, servers)
        self._leases[key] = lease
        return lease

    async def release(self, lease: RelayLease, *, running: bool = False) -> None:
        """The step's sockets closed; `running`: its sandbox goes on without this service (its
        directory is kept for the service that re-attaches)."""
        if self._leases.get(lease.key) is lease:
            del self._leases[lease.key]
        await lease.close(keep_directory=running)

    def _tracked(self, key: str, route: Route, handler: Handler) -> Handler:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            if task is not None:
                self._connections.add(task)
            try:
                await handler(reader, writer)
            except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
                log.debug("relay %s %s: %s", key, route.name, exc)
            finally:
                writer.close()
                if task is not None:
                    self._connections.discard(task)

        return serve

    def _handler(self, key: str, route: Route) -> Handler:
        async def tcp(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            upstream = await self._connect(*route.upstream)
            await _pipe_both(reader, writer, *upstream)

        async def http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            up_reader, up_writer = await self._connect(*route.upstream)
            answers = asyncio.create_task(_pipe(up_reader, writer))
            try:
                while (head := await read_head(reader)) is not None:
                    if head.method != "POST" or head.path not in route.paths:
                        raise RefusedRequest(403, f"{head.method} {head.path[:100]} is not an endpoint agents may use")
                    up_writer.write(head.raw)
                    await forward_body(head, reader, up_writer)
                    await up_writer.drain()
                _half_close(up_writer)
                await answers
            except RefusedRequest as exc:
                log.warning("relay %s: refused a request to %s:%d (%s)", key, *route.upstream, exc)
                answers.cancel()
                writer.write(refusal(exc.status, str(exc)))
                await writer.drain()
            finally:
                answers.cancel()
                up_writer.close()

        async def connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                head = await read_head(reader)
                if head is None:
                    return
                target = connect_target(head)
                if target not in route.allowed:
                    raise RefusedRequest(403, f"{target[0]}:{target[1]} is not an endpoint agents may use")
            except RefusedRequest as exc:
                log.warning("relay %s: refused a tunnel (%s)", key, exc)
                writer.write(refusal(exc.status, str(exc)))
                await writer.drain()
                return
            upstream = await self._connect(*target)
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await _pipe_both(reader, writer, *upstream)

        return {"tcp": tcp, "http": http, "connect": connect}[route.kind]

    async def _connect(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, limit=CHUNK),
                                                self._connect_timeout)
        sock = writer.get_extra_info("socket")
        if sock is not None:  # small streamed pieces go out at once, not after Nagle's wait
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return reader, writer


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Forward what arrives as it arrives until EOF, then pass the EOF on."""
    while data := await reader.read(CHUNK):
        writer.write(data)
        await writer.drain()
    _half_close(writer)


async def _pipe_both(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter) -> None:
    tasks = [asyncio.create_task(_pipe(reader, up_writer)), asyncio.create_task(_pipe(up_reader, writer))]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        up_writer.close()


def _half_close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, RuntimeError):
        if writer.can_write_eof():
            writer.write_eof()


def _empty(directory: Path) -> None:
    """Remove what a step's directory holds (its sockets, or those a dead service left)."""
    with contextlib.suppress(FileNotFoundError):
        for entry in directory.iterdir():
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()


def _bound(directory: Path, name: str) -> socket.socket:
    """A listening Unix socket at `directory/name`; a path too long for `bind` is reached through
    the directory's descriptor (`/proc/self/fd/N/name`)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        path = directory / name
        if len(os.fsencode(path)) <= SOCKET_PATH_LIMIT:
            sock.bind(str(path))
        else:
            folder = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                sock.bind(f"/proc/self/fd/{folder}/{name}")
            finally:
                os.close(folder)
        sock.listen(64)
    except BaseException:
        sock.close()
        raise
    return sock
