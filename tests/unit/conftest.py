"""Fixtures shared by the unit tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.clients.knowledge_base import KnowledgeBaseClient
from tests.fixtures.kb_server import FakeKbServer


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
def kb_client(http: httpx.AsyncClient, kb: FakeKbServer) -> KnowledgeBaseClient:
    return KnowledgeBaseClient(http, kb.url, kb.url, timeout=2)
