"""The compiled graph in-process: an in-memory checkpointer, real services on loopback (the fake
LLM, KB and Kotlin servers, nx-27017 for the context store) and the LocalRunner with the
scripted agent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from app.agents.local import LocalRunner
from app.agents.workspace import WorkspaceManager
from app.clients.knowledge_base import KnowledgeBaseClient
from app.clients.kotlin import KotlinClient
from app.clients.outbox import OutboxWriter
from app.config import Settings
from app.graph.builder import build_graph
from app.graph.context import RunContext
from app.graph.llm_gate import ApprovingLlm
from app.llm.provider import LitellmProvider
from app.persistence.context_store import COLLECTION_NAME, ContextStore
from app.persistence.outbox import COLLECTION_NAME as OUTBOX_COLLECTION
from app.persistence.outbox import OutboxStore
from app.persistence.project_memory import COLLECTION_NAME as PROJECTS_COLLECTION
from app.persistence.project_memory import ProjectMemory
from tests.support import SCRIPTED_AGENT


@pytest.fixture
def run_settings(request: pytest.FixtureRequest, llm: Any, kb: Any, kotlin: Any, tmp_path: Path) -> dict[str, Any]:
    """Settings of the in-process runs; `@pytest.mark.settings(name=value)` changes one for a test
    (every such marker of the test counts: a module's, a test's and a parameter's)."""
    chosen: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("settings"))):  # the closest marker wins
        chosen |= marker.kwargs
    return {"ollama_url": llm.url, "local_model": "test-model", "heartbeat_dead_seconds": 10,
            "knowledgebase_url": kb.url, "kotlin_server_url": kotlin.url, "data_root": tmp_path,
            "kb_timeout_seconds": 2, "response_language": "cs", "llm_retry_base_delay": 0.01,
            "local_agent_command": SCRIPTED_AGENT, **chosen}


@pytest.fixture
async def ctx(run_settings: dict[str, Any], kb: Any, kotlin: Any, mongo_db: Any,
              tmp_path: Path) -> AsyncIterator[RunContext]:
    settings = Settings(**run_settings)
    store = ContextStore(mongo_db[COLLECTION_NAME])
    await store.setup()
    workspaces = WorkspaceManager(tmp_path)
    outbox = OutboxWriter(OutboxStore(mongo_db[OUTBOX_COLLECTION], pod_id="graph-tests"))  # nodes call the tracker only
    async with httpx.AsyncClient() as http:
        yield RunContext(
            settings=settings, llm=ApprovingLlm(LitellmProvider(settings)),
            kb=KnowledgeBaseClient(http, kb.url, kb.url, timeout=2), kotlin=KotlinClient(http, kotlin.url, outbox),
            context_store=store, project_memory=ProjectMemory(mongo_db[PROJECTS_COLLECTION]),
            runner=LocalRunner(workspaces, settings), workspaces=workspaces,
        )
        await store.drain()


@pytest.fixture
def graph() -> Any:
    return build_graph().compile(checkpointer=InMemorySaver())

