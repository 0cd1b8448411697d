"""Fixtures of the terminal client's unit tests: a scripted service on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.cli.fake_service import FakeService


@pytest.fixture(scope="session")
def fake_service_server() -> Iterator[FakeService]:
    with FakeService() as server:
        yield server


@pytest.fixture
def fake_service(fake_service_server: FakeService) -> FakeService:
    fake_service_server.reset()
    return fake_service_server
