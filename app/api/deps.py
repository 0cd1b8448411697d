"""Dependencies as `Annotated` aliases over `app.state.services` (the lifespan's `Services`; each
accessor states the type it reads, since the api layer does not import the lifespan).

The accessors are `async def` although they await nothing: FastAPI runs a plain `def` dependency in
its thread pool, a thread hop per request that cost a quarter of a `/status` answer's time.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.chat.compression import ChatCompressor
from app.config import Settings
from app.correction.service import CorrectionService
from app.health import HealthChecker
from app.observability.metrics import Metrics
from app.observability.redaction import Redactor
from app.persistence.console_sessions import ConsoleStore
from app.runs.events import EventHub
from app.runs.manager import RunManager
from app.runs.views import RunViews


async def get_settings(request: Request) -> Settings:
    service: Settings = request.app.state.services.settings
    return service


async def get_run_manager(request: Request) -> RunManager:
    service: RunManager = request.app.state.services.runs
    return service


async def get_run_views(request: Request) -> RunViews:
    service: RunViews = request.app.state.services.views
    return service


async def get_event_hub(request: Request) -> EventHub:
    service: EventHub = request.app.state.services.events
    return service


async def get_health(request: Request) -> HealthChecker:
    service: HealthChecker = request.app.state.services.health
    return service


async def get_metrics(request: Request) -> Metrics:
    service: Metrics = request.app.state.services.metrics
    return service


async def get_chat_compressor(request: Request) -> ChatCompressor:
    service: ChatCompressor = request.app.state.services.chat_compressor
    return service


async def get_correction_service(request: Request) -> CorrectionService:
    service: CorrectionService = request.app.state.services.correction
    return service


SettingsDep = Annotated[Settings, Depends(get_settings)]


async def get_console_store(request: Request) -> ConsoleStore:
    service: ConsoleStore = request.app.state.services.console
    return service


async def get_redactor(request: Request) -> Redactor:
    service: Redactor = request.app.state.services.redact
    return service


RunManagerDep = Annotated[RunManager, Depends(get_run_manager)]
RunViewsDep = Annotated[RunViews, Depends(get_run_views)]
EventHubDep = Annotated[EventHub, Depends(get_event_hub)]
HealthDep = Annotated[HealthChecker, Depends(get_health)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
ChatCompressorDep = Annotated[ChatCompressor, Depends(get_chat_compressor)]
CorrectionServiceDep = Annotated[CorrectionService, Depends(get_correction_service)]
RedactorDep = Annotated[Redactor, Depends(get_redactor)]
ConsoleStoreDep = Annotated[ConsoleStore, Depends(get_console_store)]
