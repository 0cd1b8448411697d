"""Fuzz every route of the OpenAPI schema (schemathesis): no input, valid or hostile, gets a 500.

The service runs as a real process with its own scripted LLM, fake Kotlin and fake KB servers, so
the runs the fuzzer starts (valid `/orchestrate` bodies do start runs) touch no other test's
fixtures. Examples are derandomized so CI is reproducible; `FUZZ_EXAMPLES=500` runs a deeper,
random search locally.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from app.config import Settings
from app.main import create_app
from tests.fixtures.kb_server import FakeKbServer
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.llm_server import ScriptedLlmServer
from tests.fixtures.service import ServiceProcess, service_env

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "20"))


@pytest.fixture(scope="module")
def fuzz_service(mongo_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    root = tmp_path_factory.mktemp("fuzz")
    with ScriptedLlmServer() as llm, FakeKotlinServer() as kotlin, FakeKbServer() as kb:
        env = service_env(mongo_url=mongo_server.url, llm_url=llm.url, kotlin_url=kotlin.url, kb_url=kb.url,
                          data_root=Path(root))
        proc = ServiceProcess(env=env, log_path=root / "service-fuzz.log").start()
        try:
            yield proc
        finally:
            proc.stop()


#: The schema the service serves at /openapi.json, built from the app without starting it.
schema = schemathesis.openapi.from_dict(create_app(Settings()).openapi())


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize="FUZZ_EXAMPLES" not in os.environ,
          suppress_health_check=list(HealthCheck))
def test_no_input_gets_a_server_error(case: Any, fuzz_service: ServiceProcess) -> None:
    response = case.call(base_url=fuzz_service.url, timeout=30)
    # A 5xx the route documents (502: the LLM behind it answered nonsense; 503: not ready) is an
    # answer, not a crash; a 500 or an undocumented 5xx is a bug.
    if response.status_code != 500 and str(response.status_code) in _documented(case):
        return
    case.validate_response(response, checks=[not_a_server_error])


def _documented(case: Any) -> set[str]:
    return {str(code) for code in case.operation.definition.raw.get("responses", {})}
