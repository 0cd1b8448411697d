"""All routers of the service."""

from fastapi import APIRouter

from app.api.routes import correction, health, internal, metrics, orchestrate, runs, stream

api_router = APIRouter()
for module in (orchestrate, runs, stream, health, metrics, internal, correction):
    api_router.include_router(module.router)
