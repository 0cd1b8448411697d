"""Who may reach the service, decided from where it listens: the start-up refusal and the Host names.

The service runs model-written code on people's repositories. On loopback only this machine reaches
it; beyond loopback anyone on the network who reaches the port could start a run, so the service
refuses to start there without `API_TOKEN` unless `ALLOW_NO_TOKEN=true` says something else keeps
strangers out (then it warns, at start and in `/health`). The check runs before uvicorn binds: in
the launchers (`python -m app.serve`, `python -m app.dev`) and when `app.main:app` is first built.
A bare `uvicorn app.main:app --host 0.0.0.0` tells the app nothing of its address, so the same rule
also holds per request (`app/api/local_only.py`): without a token, a request that reached a
non-loopback address of this machine is refused.

A browser page can reach a loopback service through a name of its own that it re-points at
127.0.0.1 (DNS rebinding); the `Host` header then carries that name. `allowed_host_names` is the set
the Host check accepts (Starlette's `TrustedHostMiddleware`, outermost in `app/main.py`: 400 for any
other name; it compares the name without its port, `[::1]:8090` as `[::1]`, case-insensitively, and
takes `*.example.org` patterns): the loopback names, the listen address itself and
`ALLOWED_HOSTS`. `None` (any name) only beyond loopback with `API_TOKEN` and no `ALLOWED_HOSTS`: the
token is the guard there, and the names a cluster uses (pod IPs for the probes, Service names, an
ingress's host) are not known here. Without a token (`ALLOW_NO_TOKEN`) the loopback names stay the
default even beyond loopback: compose publishes the port on the host's 127.0.0.1, which a rebound
name would otherwise reach; a cluster names its hosts (or `*`) in `ALLOWED_HOSTS`.
"""

from __future__ import annotations

import ipaddress

from app.config import Settings

#: Listen addresses that mean every interface.
ANY_ADDRESS = frozenset({"", "0.0.0.0", "::", "[::]"})
#: Host names that only a page already on this machine's loopback sends (never a rebound name).
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})


class ListenRefusedError(RuntimeError):
    """The settings would open the service to the network without a token."""


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1); every other address or name is beyond."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback  # a dual-stack socket's view of 127.0.0.1
    return address.is_loopback


def check_listen(settings: Settings) -> str | None:
    """Raise `ListenRefusedError` for a listen beyond loopback without `API_TOKEN` (and without
    `ALLOW_NO_TOKEN`); return the warning to say loudly when it is allowed without one, else None."""
    if is_loopback(settings.host) or settings.api_token is not None:
        return None
    if not settings.allow_no_token:
        raise ListenRefusedError(
            f"refusing to listen on {settings.host or 'every interface'}:{settings.port} without API_TOKEN: anyone "
            "who reaches the port could run code on the workspaces. Set API_TOKEN (clients send it as a bearer "
            "token), listen on loopback (HOST=127.0.0.1), or set ALLOW_NO_TOKEN=true where something else keeps "
            "strangers out (e.g. a NetworkPolicy).")
    return (f"listening on {settings.host or 'every interface'}:{settings.port} WITHOUT an API_TOKEN "
            "(ALLOW_NO_TOKEN=true): anyone who reaches this port can run code on the workspaces")


def loopback_only(settings: Settings) -> bool:
    """True when the service must answer on loopback only: no `API_TOKEN` and no `ALLOW_NO_TOKEN`."""
    return settings.api_token is None and not settings.allow_no_token


def listen_warnings(settings: Settings) -> list[str]:
    """What `/health` says of the listen: the warning of a listen beyond loopback without a token, or nothing."""
    try:
        warning = check_listen(settings)
    except ListenRefusedError as exc:  # an app built by hand (tests): it says so rather than fail the report
        warning = str(exc)
    return [warning] if warning else []


def allowed_host_names(settings: Settings) -> frozenset[str] | None:
    """Host names (lower case, without port) the service answers; None: every name."""
    names = {name.strip().lower() for name in settings.allowed_hosts if name.strip()}
    if "*" in names or (not names and not is_loopback(settings.host) and settings.api_token is not None):
        return None
    own = settings.host.strip().lower()
    if own not in ANY_ADDRESS:
        names.add(f"[{own}]" if ":" in own and not own.startswith("[") else own)
    return frozenset(names | LOOPBACK_NAMES)
