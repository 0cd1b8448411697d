"""Inside the sandbox: the agent's loopback ports, forwarded to the relay's Unix sockets.

`python relay_forwarder.py PORT=SOCKET... -- COMMAND...` listens on `127.0.0.1:PORT` (and
`[::1]:PORT` where the namespace has IPv6) for every route, then starts the forwarding in a
process of its own and replaces itself with COMMAND (the entrypoint): the listeners exist before
the agent starts, the entrypoint keeps the process the runner and bwrap know, and the forwarder
dies with the sandbox (when COMMAND ends, bwrap's init ends and the kernel kills the rest of
its PID namespace). It stays in the agent's process group: the runner's SIGTERM to the group
ends it with the agent (the entrypoint writes its result without the network).

Bytes are passed on as they arrive (`recv` then `sendall`), both ways, a thread per direction:
a streamed answer reaches the agent token by token. Standard library only: it runs with whatever
Python the sandbox shows (the service's, started with `-I -S`), and imports little (each step
pays its start).
"""

from __future__ import annotations

import os
import socket
import sys
import threading

CHUNK = 64 * 1024


def main(argv: list[str]) -> None:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        sys.exit("usage: relay_forwarder.py PORT=SOCKET... -- COMMAND...")
    split = argv.index("--")
    routes = [(int(port), path) for port, _, path in (arg.partition("=") for arg in argv[:split])]
    command = argv[split + 1:]
    listeners = [(listener, path) for port, path in routes for listener in _listen(port)]
    child = os.fork()
    if child == 0:  # the forwarder: a grandchild, so the entrypoint has no child it did not start
        try:
            if os.fork() == 0:
                _serve(listeners)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    for listener, _ in listeners:
        listener.close()
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.exit(f"relay_forwarder: cannot start {command[0]}: {exc}")


def _listen(port: int) -> list[socket.socket]:
    found = []
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            listener.bind((host, port))
            listener.listen(128)
        except OSError:
            listener.close()
            if family == socket.AF_INET:
                raise
            continue
        found.append(listener)
    return found


def _serve(listeners: list[tuple[socket.socket, str]]) -> None:
    threads = [threading.Thread(target=_accept, args=pair, daemon=True) for pair in listeners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _accept(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_connect, args=(client, path), daemon=True).start()


def _connect(client: socket.socket, path: str) -> None:
    relay = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        relay.connect(path)
    except OSError as exc:
        print(f"relay_forwarder: {path}: {exc}", file=sys.stderr, flush=True)
        client.close()
        relay.close()
        return
    back = threading.Thread(target=_copy, args=(relay, client), daemon=True)
    back.start()
    _copy(client, relay)
    back.join()
    client.close()
    relay.close()


def _copy(source: socket.socket, target: socket.socket) -> None:
    """Until EOF or an error, then the EOF is passed on (the other direction goes on)."""
    try:
        while data := source.recv(CHUNK):
            target.sendall(data)
    except OSError:
        pass
    try:
        target.shutdown(socket.SHUT_WR)
    except OSError:
        return


if __name__ == "__main__":
    main(sys.argv[1:])
