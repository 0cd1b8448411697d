"""Drive one segment of a run (start or resume) through the compiled graph.

Node starts become progress pushes and SSE events as they happen; a push costs one small
outbox write (delivery to Kotlin happens elsewhere), so the graph runs at checkpointer speed.
The terminal outcome is read once at the end.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.pregel import Pregel

from app.clients.kotlin import KotlinClient
from app.graph import progress
from app.graph.builder import NODE_NAMES
from app.graph.context import RunContext
from app.graph.nodes._common import run_language
from app.graph.state import reducers
from app.graph.texts import texts
from app.llm.scope import current_scope
from app.observability.metrics import Metrics
from app.runs.events import EventLog
from app.schemas.kotlin import ProgressPush

log = logging.getLogger(__name__)

def merge_update(values: dict[str, Any], update: dict[str, Any]) -> None:
    """Apply one node's update the way the graph's reducers do, so the run's final values are
    known without reading the checkpoint back."""
    combine = reducers()
    for key, value in update.items():
        values[key] = combine[key](values.get(key) or [], value) if key in combine else value


@dataclass
class RunProgress:
    """What the driver knows of a running segment, for the manager: the highest percent reported
    (pushes and /status never show less) and the state as the nodes left it (a cancel or a crash
    is reported from it without reading the checkpoint back)."""

    percent: float = 0.0
    values: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunIdentity:
    thread_id: str
    task_id: str
    client_id: str


@dataclass
class RunOutcome:
    status: Literal["done", "error", "interrupted"]
    summary: str | None = None
    error: str | None = None
    interrupt_action: str | None = None
    interrupt_description: str | None = None
    interrupt: dict[str, Any] | None = None
    interrupt_id: str | None = None
    """LangGraph's id of the interrupt: the same when a crash replay raises it again, new for a
    later interrupt of the thread (it tells the `interrupted` status pushes apart)."""
    branch: str | None = None
    artifacts: list[str] = field(default_factory=list)
    step_results: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    percent: float = 0.0
    report: str | None = None
    """The full report of a failed run (the `error` is its bounded form)."""


class RunDriver:
    def __init__(self, graph: Pregel, context: RunContext, kotlin: KotlinClient, metrics: Metrics) -> None:
        self._graph = graph
        self._context = context
        self._kotlin = kotlin
        self._metrics = metrics

    def config(self, thread_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread_id},
                "recursion_limit": self._context.settings.recursion_limit}

    async def drive(self, run: RunIdentity, graph_input: Any, events: EventLog,
                    known: dict[str, Any] | None = None, run_progress: RunProgress | None = None) -> RunOutcome:
        """Stream the graph to its next stop (END or an interrupt). `known` is the state a
        resumed run starts from (the checkpoint the caller already read)."""
        tracked: dict[str, Any] = dict(known or (graph_input if isinstance(graph_input, dict) else {}))
        run_progress = run_progress or RunProgress()
        run_progress.values = tracked
        interrupt_value: dict[str, Any] | None = None
        interrupt_id: str | None = None
        started: dict[str, float] = {}
        config = self.config(run.thread_id)
        async for mode, chunk in self._graph.astream(
            graph_input, config, context=self._context, stream_mode=["tasks", "updates", "custom"]
        ):
            if mode == "tasks":
                await self._on_task(run, chunk, tracked, events, started, run_progress)
            elif mode == "updates":
                for node, update in chunk.items():
                    if node == "__interrupt__":
                        interrupt_value, interrupt_id = _interrupt_payload(update)
                    elif isinstance(update, dict):
                        merge_update(tracked, update)
            elif mode == "custom" and isinstance(chunk, dict):
                events.publish(str(chunk.get("type", "custom")), {k: v for k, v in chunk.items() if k != "type"})
        if interrupt_value is not None:
            return RunOutcome(
                status="interrupted",
                interrupt_action=str(interrupt_value.get("action") or "unknown"),
                interrupt_description=str(interrupt_value.get("description") or ""),
                interrupt=interrupt_value,
                interrupt_id=interrupt_id,
                percent=run_progress.percent,
            )
        common = {
            "branch": tracked.get("branch"),
            "artifacts": list(tracked.get("artifacts") or []),
            "step_results": list(tracked.get("step_results") or []),
        }
        if tracked.get("error"):
            return RunOutcome(status="error", error=str(tracked["error"]), report=tracked.get("final_result"),
                              percent=run_progress.percent, **common)
        return RunOutcome(status="done", summary=tracked.get("final_result"), percent=progress.DONE, **common)

    async def _on_task(self, run: RunIdentity, chunk: dict[str, Any], tracked: dict[str, Any], events: EventLog,
                       started: dict[str, float], run_progress: RunProgress) -> None:
        node = chunk.get("name")
        if node not in NODE_NAMES:
            return
        if "input" in chunk:  # a task start (finish events carry "result")
            started[chunk.get("id", node)] = time.perf_counter()
            current_scope().node = node  # LLM usage is booked to the running node
            goals, steps = tracked.get("goals") or [], tracked.get("steps") or []
            run_progress.percent = progress.monotonic(run_progress.percent, tracked, node)
            push = ProgressPush(
                task_id=run.task_id, client_id=run.client_id, node=node,
                message=progress.message(tracked, node, texts(run_language(tracked, self._context.settings))),
                percent=run_progress.percent,
                goal_index=int(tracked.get("current_goal_index") or 0), total_goals=len(goals),
                step_index=int(tracked.get("current_step_index") or 0), total_steps=len(steps),
            )
            await self._kotlin.push_progress(push)
            events.publish("node_start", {"node": node, "message": push.message, "percent": push.percent,
                                          "goal_index": push.goal_index, "total_goals": push.total_goals,
                                          "step_index": push.step_index, "total_steps": push.total_steps,
                                          "attempt": int(tracked.get("attempt") or 1)})
        else:
            error = chunk.get("error")
            began = started.pop(chunk.get("id", node), None)
            duration = None
            if began is not None:
                seconds = time.perf_counter() - began
                self._metrics.node_finished(node, seconds, failed=bool(error))
                duration = round(seconds * 1000, 2)
            events.publish("node_end", {"node": node, "duration_ms": duration,
                                        **({"error": str(error)} if error else {})})


def _interrupt_payload(update: Any) -> tuple[dict[str, Any], str | None]:
    """The value and id of the first pending interrupt (our nodes raise one at a time)."""
    interrupts = list(update) if isinstance(update, (list, tuple)) else [update]
    if not interrupts:
        return {"action": "unknown", "description": ""}, None
    value = getattr(interrupts[0], "value", interrupts[0])
    interrupt_id = getattr(interrupts[0], "id", None)
    payload = value if isinstance(value, dict) else {"action": "unknown", "description": str(value)}
    return payload, str(interrupt_id) if interrupt_id else None
