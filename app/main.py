"""App factory. `uvicorn app.main:app` reads settings from the environment when imported, so a
bad setting stops the process with a clear error before it listens."""

from __future__ import annotations

from fastapi import FastAPI

from app.api.auth import ApiTokenMiddleware, configured_token
from app.api.errors import register_error_handlers
from app.api.limits import RequestLimits, RequestLimitsMiddleware
from app.api.router import api_router
from app.config import Settings
from app.lifespan import lifespan
from app.observability.logs import configure_logging


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    app = FastAPI(title="Jervis Orchestrator", version="0.1.0", lifespan=lifespan)
    app.state.settings = settings
    app.add_middleware(RequestLimitsMiddleware, limits=RequestLimits.from_settings(settings))
    register_error_handlers(app)
    app.add_middleware(ApiTokenMiddleware, token=configured_token)
    app.include_router(api_router)
    return app


settings = Settings()
configure_logging(level=settings.log_level, fmt=settings.log_format, secrets=settings.secret_values())
app = create_app(settings)
