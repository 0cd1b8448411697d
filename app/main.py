"""App factory. `uvicorn app.main:app` reads settings from the environment at start-up."""

from __future__ import annotations

import logging

from fastapi import FastAPI

from app.api.errors import register_error_handlers
from app.api.router import api_router
from app.config import Settings
from app.lifespan import lifespan


def create_app(settings: Settings | None = None) -> FastAPI:
    app = FastAPI(title="Jervis Orchestrator", version="0.1.0", lifespan=lifespan)
    app.state.settings = settings
    register_error_handlers(app)
    app.include_router(api_router)
    return app


logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
app = create_app()
