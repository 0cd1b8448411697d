"""A local-runner service whose agent is the hostile `link_agent.py` (the scripted agent that can
also plant symlinks), shared by the read-back and workspace tests of this package."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.service import ServiceProcess, local_service_process

LINK_AGENT = [sys.executable, str(Path(__file__).resolve().parent / "link_agent.py")]


@pytest.fixture(scope="module")
def reads_service(mongo_server: Any, llm_server: Any, kotlin_server: Any, kb_server: Any, data_root: Path,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    proc = local_service_process(mongo_server, llm_server, kotlin_server, kb_server, data_root,
                                 tmp_path_factory.mktemp("svc") / "service-reads.log",
                                 local_agent_command=json.dumps(LINK_AGENT))
    yield proc
    proc.stop()


@pytest.fixture
def api(reads_service: ServiceProcess) -> Iterator[httpx.Client]:
    with reads_service.client() as http:
        yield http
