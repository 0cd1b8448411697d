"""All routers of the service."""

from fastapi import APIRouter

from app.api.routes import correction, health, internal, messages, metrics, orchestrate, runs, stream, ui

api_router = APIRouter()
for module in (orchestrate, runs, stream, health, metrics, internal, correction, ui, messages):
    api_router.include_router(module.router)
