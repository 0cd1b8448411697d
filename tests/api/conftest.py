"""One local-runner service process for the compression and correction API tests (the agent
runner plays no part in them, so the two-runner `service` fixture would only double the work)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.service import ServiceProcess, local_service_process


@pytest.fixture(scope="session")
def local_service(mongo_server: Any, llm_server: Any, kotlin_server: Any, kb_server: Any, data_root: Path,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    proc = local_service_process(mongo_server, llm_server, kotlin_server, kb_server, data_root,
                                 tmp_path_factory.mktemp("svc") / "service-api.log")
    yield proc
    proc.stop()


@pytest.fixture
def api(local_service: ServiceProcess) -> Iterator[httpx.Client]:
    with local_service.client() as http:
        yield http
