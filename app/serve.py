"""Start the service: `python -m app.serve` (the image's command; `python -m app.dev` ends here too).

One place decides how uvicorn listens, from the settings: `HOST` and `PORT`; the refusal to listen
beyond loopback without `API_TOKEN` (`app/runtime/listen.py`), said and exited with status 2
before anything binds; and whose forwarded headers are believed. uvicorn on its own believes
`X-Forwarded-For` from 127.0.0.1 (its `FORWARDED_ALLOW_IPS` default), where the local agents
are: any of them could claim any client address to the sign-in throttle. Here only
`TRUSTED_PROXIES` is believed (none by default: the peer is the client), and an inherited
`FORWARDED_ALLOW_IPS` is ignored with a warning, since a CLI value or a variable would otherwise
widen it silently.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

import uvicorn

from app.config import Settings
from app.runtime.listen import ListenRefusedError, check_listen, is_loopback

#: Exit status of a refused start (a configuration error, as argparse uses).
REFUSED = 2
#: uvicorn's bound on waiting for open connections at SIGTERM: its CLI reads the variable, uvicorn.run
#: does not, so it is passed on (k8s/app_orchestrator.yaml sets it).
GRACEFUL_SHUTDOWN_VARIABLE = "UVICORN_TIMEOUT_GRACEFUL_SHUTDOWN"


def forwarded_allow_ips(settings: Settings) -> list[str]:
    """The peers whose forwarded headers uvicorn believes: `TRUSTED_PROXIES`, never its loopback default."""
    return list(settings.trusted_proxies)


def graceful_shutdown_seconds(environ: Mapping[str, str] = os.environ) -> int | None:
    """`UVICORN_TIMEOUT_GRACEFUL_SHUTDOWN` as uvicorn's CLI would read it (None: wait for every connection)."""
    value = environ.get(GRACEFUL_SHUTDOWN_VARIABLE, "").strip()
    return int(value) if value else None


def announce(settings: Settings, warning: str | None) -> None:
    """Say who can reach the service, before it listens."""
    where = f"{settings.host}:{settings.port}"
    if is_loopback(settings.host):
        print(f"listening on {where} (this machine only; HOST=0.0.0.0 with API_TOKEN to listen on every interface)",
              flush=True)
    else:
        print(f"listening on {where}, " + ("with API_TOKEN" if warning is None else f"WARNING: {warning}"), flush=True)
    if "FORWARDED_ALLOW_IPS" in os.environ:
        print("WARNING: FORWARDED_ALLOW_IPS is ignored; name the proxies whose X-Forwarded-For is believed in "
              "TRUSTED_PROXIES", file=sys.stderr, flush=True)


def serve(settings: Settings | None = None) -> int:
    """Check, announce and run uvicorn until it stops; REFUSED without binding when the check fails."""
    settings = settings or Settings()
    try:
        warning = check_listen(settings)
    except ListenRefusedError as exc:
        print(f"jervis: {exc}", file=sys.stderr, flush=True)
        return REFUSED
    announce(settings, warning)
    proxies = forwarded_allow_ips(settings)
    uvicorn.run("app.main:app", host=settings.host, port=settings.port, proxy_headers=bool(proxies),
                forwarded_allow_ips=proxies, timeout_graceful_shutdown=graceful_shutdown_seconds())
    return 0


if __name__ == "__main__":
    sys.exit(serve())
