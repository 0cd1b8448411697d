"""Expected failures inside the work loop become a halt, not a crash.

Once work has started, a budget that runs out or a planner whose model keeps failing must not
strand finished goals: the node returns `halt`, routing goes to git_operations (the finished
work is offered for commit) and finalize reports. Anything else still propagates.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable
from typing import Any, Protocol

from app.graph.llm_gate import speaking
from app.graph.run_state import NodeRuntime, run_language
from app.graph.state import OrchestratorState
from app.llm.budget import BudgetExceededError
from app.llm.provider import LlmError
from app.texts import texts

log = logging.getLogger(__name__)

class Node(Protocol):
    """A node as the graph calls it (LangGraph passes `runtime` by name)."""

    __name__: str

    def __call__(self, state: OrchestratorState, runtime: NodeRuntime) -> Awaitable[dict[str, Any]]: ...


def halting(node: Node) -> Node:
    @functools.wraps(node)
    async def guarded(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
        try:
            return await node(state, runtime)
        except BudgetExceededError as exc:
            t = texts(run_language(state, runtime.context.settings))
            log.warning("%s: budget exhausted, the run stops: %s", node.__name__, exc)
            return {"halt": {"kind": "budget", "message": t.halt_budget.format(reason=exc)}}
        except LlmError as exc:
            t = texts(run_language(state, runtime.context.settings))
            log.warning("%s: the LLM failed, the run stops: %s", node.__name__, exc)
            return {"halt": {"kind": "llm", "message": t.halt_llm.format(node=node.__name__, reason=exc)}}
    return guarded


def in_run_language(node: Node) -> Node:
    """The node runs with its run's language known to the LLM approval gate (`llm_gate.speaking`)."""
    @functools.wraps(node)
    async def spoken(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
        with speaking(run_language(state, runtime.context.settings)):
            return await node(state, runtime)
    return spoken
