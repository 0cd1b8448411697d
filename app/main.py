"""App factory. `create_app(settings)` is the only way the app is built; nothing happens at import.

`uvicorn app.main:app` asks this module for `app`, which reads the settings from the environment
and configures logging then (once, on first access): a bad setting stops the process with a
clear error before it listens. Tests build their own with `create_app(settings)`.
"""

from __future__ import annotations

import functools

from fastapi import FastAPI

from app.api.auth import ApiTokenMiddleware, configured_token, console_store
from app.api.errors import register_error_handlers
from app.api.limits import RequestLimits, RequestLimitsMiddleware
from app.api.router import api_router
from app.config import Settings
from app.lifespan import lifespan
from app.observability.logs import configure_logging
from app.observability.redaction import secret_values


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    app = FastAPI(title="Jervis Orchestrator", version="0.1.0", lifespan=lifespan)
    app.state.settings = settings
    app.add_middleware(RequestLimitsMiddleware, limits=RequestLimits.from_settings(settings))
    register_error_handlers(app)
    app.add_middleware(ApiTokenMiddleware, token=configured_token, console=console_store)
    app.include_router(api_router)
    return app


@functools.cache
def served_app() -> FastAPI:
    """The process's app, from the environment, with logging configured (what uvicorn serves)."""
    settings = Settings()
    configure_logging(level=settings.log_level, fmt=settings.log_format, secrets=secret_values(settings))
    return create_app(settings)


def __getattr__(name: str) -> FastAPI:
    """`app.main:app` builds the served app on first access (PEP 562), not at import."""
    if name == "app":
        return served_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
