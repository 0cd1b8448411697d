"""App factory. `create_app(settings)` is the only way the app is built; nothing happens at import.

`uvicorn app.main:app` (which `python -m app.serve` runs) asks this module for `app`, which reads
the settings from the environment and configures logging then (once, on first access): a bad
setting, or a listen beyond loopback without `API_TOKEN` (`app/runtime/listen.py`), stops the
process with a clear error before it listens. Tests build their own with `create_app(settings)`.
"""

from __future__ import annotations

import functools
import logging

from fastapi import FastAPI
from starlette.middleware.trustedhost import TrustedHostMiddleware

from app.api.auth import ApiTokenMiddleware, configured_token, console_store
from app.api.errors import register_error_handlers
from app.api.limits import RequestLimits, RequestLimitsMiddleware
from app.api.local_only import LoopbackOnlyMiddleware
from app.api.router import api_router
from app.config import Settings
from app.lifespan import lifespan
from app.observability.logs import configure_logging
from app.observability.redaction import secret_values
from app.runtime.listen import allowed_host_names, check_listen, loopback_only

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    app = FastAPI(title="Jervis Orchestrator", version="0.1.0", lifespan=lifespan)
    app.state.settings = settings
    app.add_middleware(RequestLimitsMiddleware, limits=RequestLimits.from_settings(settings))
    register_error_handlers(app)
    app.add_middleware(ApiTokenMiddleware, token=configured_token, console=console_store)
    # Added last, so they run first: no route, the token check and the console included, sees a
    # request naming a host the service does not answer to (DNS rebinding: 400; the names in
    # app/runtime/listen.py), nor, without a token, one that came in beyond loopback (403).
    allowed = allowed_host_names(settings)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=["*"] if allowed is None else sorted(allowed),
                       www_redirect=False)
    if loopback_only(settings):  # however uvicorn was started: no token, no answer beyond loopback
        app.add_middleware(LoopbackOnlyMiddleware)
    app.include_router(api_router)
    return app


@functools.cache
def served_app() -> FastAPI:
    """The process's app, from the environment, with logging configured (what uvicorn serves)."""
    settings = Settings()
    warning = check_listen(settings)
    configure_logging(level=settings.log_level, fmt=settings.log_format, secrets=secret_values(settings))
    if warning:
        log.warning("%s", warning)
    return create_app(settings)


def __getattr__(name: str) -> FastAPI:
    """`app.main:app` builds the served app on first access (PEP 562), not at import."""
    if name == "app":
        return served_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
