"""Helpers of the in-process graph tests (their fixtures are in conftest.py)."""

from __future__ import annotations

from typing import Any

from app.graph.context import RunContext
from app.runs.segment import initial_state
from app.schemas.kotlin import OrchestrateRequest
from tests.support import orchestrate_body


def start(query: str, **overrides: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    request = OrchestrateRequest.model_validate(orchestrate_body(query=query, **overrides))
    thread_id = f"thread-{request.task_id}-0000abcd"
    return initial_state(request), {"configurable": {"thread_id": thread_id}, "recursion_limit": 150}


def matched(llm: Any) -> list[str | None]:
    return [r.matched for r in llm.requests]


async def nodes_of(graph: Any, value: Any, config: dict[str, Any], ctx: RunContext) -> list[str]:
    """Names of the nodes that ran, in order (from the "updates" stream)."""
    names = []
    async for update in graph.astream(value, config, context=ctx, stream_mode="updates"):
        names += list(update)
    return names
