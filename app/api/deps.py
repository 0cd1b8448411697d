"""Dependencies as `Annotated` aliases over `app.state.services`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request

from app.chat.compression import ChatCompressor
from app.config import Settings
from app.correction.service import CorrectionService
from app.health import HealthChecker
from app.observability.metrics import Metrics
from app.observability.redaction import Redactor
from app.runs.events import EventHub
from app.runs.manager import RunManager

if TYPE_CHECKING:  # the lifespan builds everything; the routes only read what it built
    from app.lifespan import Services


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def get_settings(request: Request) -> Settings:
    return _services(request).settings


def get_run_manager(request: Request) -> RunManager:
    return _services(request).runs


def get_event_hub(request: Request) -> EventHub:
    return _services(request).events


def get_health(request: Request) -> HealthChecker:
    return _services(request).health


def get_metrics(request: Request) -> Metrics:
    return _services(request).metrics


def get_chat_compressor(request: Request) -> ChatCompressor:
    return _services(request).chat_compressor


def get_correction_service(request: Request) -> CorrectionService:
    return _services(request).correction


SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_redactor(request: Request) -> Redactor:
    return _services(request).redact


RunManagerDep = Annotated[RunManager, Depends(get_run_manager)]
EventHubDep = Annotated[EventHub, Depends(get_event_hub)]
HealthDep = Annotated[HealthChecker, Depends(get_health)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
ChatCompressorDep = Annotated[ChatCompressor, Depends(get_chat_compressor)]
CorrectionServiceDep = Annotated[CorrectionService, Depends(get_correction_service)]
RedactorDep = Annotated[Redactor, Depends(get_redactor)]
