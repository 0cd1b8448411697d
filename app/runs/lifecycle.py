"""Drive one segment of a run (start or resume) through the compiled graph.

Node starts become progress pushes and SSE events as they happen. A progress push is queued for
the outbox writer, which stores it (in production order, ahead of any later status) before it
is delivered; the node does not wait for that write: a heartbeat lost to a crash in those
milliseconds is produced again when the adopted run repeats the node, and the graph runs at
checkpointer speed. The terminal outcome is read once at the end.

Every step's checkpoint is written before the next step starts (`DURABILITY`), so a failed write
surfaces at the step that made it. When it failed because MongoDB is unreachable, the segment
waits for MongoDB (`MongoOutage`, keeping its slot) and continues from its last checkpoint; past
the outage deadline it raises `MongoUnavailableError` and the run is suspended, never failed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel
from langgraph.types import Command, Durability

from app.clients.kotlin import KotlinClient
from app.graph.builder import ENTRY_NODE, NODE_NAMES
from app.graph.context import RunContext
from app.graph.rules import progress
from app.graph.run_state import run_language
from app.graph.state import reducers
from app.llm.scope import current_scope
from app.observability.metrics import Metrics
from app.persistence.mongo import is_unreachable
from app.persistence.outage import MongoOutage
from app.runs.events import EventLog
from app.runs.goal_progress import TITLE_CHARS, GoalActivity, activity_of, goal_states
from app.schemas.kotlin import ProgressPush
from app.texts import Texts, texts
from app.texts.clip import clip

log = logging.getLogger(__name__)

#: LangGraph's durability mode of every segment. `sync`: each step's checkpoint is written before
#: the next step starts, so a failed write raises at the step that made it and a crash loses at
#: most the step in flight. `async` (LangGraph's default) overlaps the write with the next step,
#: and a failed write surfaces only when the segment ends, after later steps have run (an agent
#: may have changed the workspace) on a state that was never saved; `exit` saves only at the end.
#: The price, measured by `bench/durability.py` on nx-27017 with a 20 KiB state: 35 ms per node
#: against 5 ms for `async` (whose write hides behind the next node's work) — under 1 % of a
#: node that calls an LLM or an agent, which take seconds.
DURABILITY: Durability = "sync"


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
    nodes_finished: int = 0
    on_node_end: Callable[[], None] | None = None
    """Called when a node finishes (the manager writes the run's usage there)."""
    goals: dict[str, GoalActivity] = field(default_factory=dict)
    """What each goal running in a wave started last (its subgraph's node starts)."""
    node: str = ""
    """The run's own node running now."""
    agent: str = ""
    """What runs the current step (`progress.agent_label`), from its last `agent_start` event; /status says it."""

    def goal_states(self, t: Texts) -> str:
        """Each goal's state for /status and SSE ("" for a plan of one goal)."""
        return goal_states(self.values, self.goals, t, self.node)


@dataclass
class _Pause:
    """An outage this segment is waiting out: its deadline holds until a node finishes again."""

    deadline: float
    nodes_finished: int


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
    def __init__(self, graph: Pregel[Any, Any, Any, Any], context: RunContext, kotlin: KotlinClient, metrics: Metrics,
                 outage: MongoOutage | None = None) -> None:
        self._graph = graph
        self._context = context
        self._kotlin = kotlin
        self._metrics = metrics
        self._outage = outage

    def config(self, thread_id: str) -> RunnableConfig:
        return {"configurable": {"thread_id": thread_id},
                "recursion_limit": self._context.settings.recursion_limit}

    async def drive(self, run: RunIdentity, graph_input: Any, events: EventLog,
                    known: dict[str, Any] | None = None, run_progress: RunProgress | None = None) -> RunOutcome:
        """Stream the graph to its next stop (END or an interrupt). `known` is the state a
        resumed run starts from (the checkpoint the caller already read).

        MongoDB unreachable (a checkpoint write, or a node's own read or write): wait for it,
        then continue from the last checkpoint — with `graph_input` again if the segment saved
        nothing yet (a start, or the user's answer still to be applied), else with None."""
        initial: dict[str, Any] = dict(known or (graph_input if isinstance(graph_input, dict) else {}))
        run_progress = run_progress or RunProgress()
        run_progress.values = dict(initial)
        config = self.config(run.thread_id)
        task = graph_input.get("task") if isinstance(graph_input, dict) else None
        if task:  # a new run: intake's KB lookup overlaps the first checkpoints
            self._context.kb_prefetch.start(run.thread_id, self._context.kb, query=task["query"],
                                            client_id=task["client_id"], project_id=task.get("project_id"))
        try:
            return await self._drive(run, graph_input, events, config, initial, run_progress)
        finally:
            self._context.kb_prefetch.discard(run.thread_id)

    async def _drive(self, run: RunIdentity, graph_input: Any, events: EventLog, config: RunnableConfig,
                     initial: dict[str, Any], run_progress: RunProgress) -> RunOutcome:
        # The checkpoint a resume starts from (a start has none; an adoption re-sends nothing).
        start_id: str | None = None
        start_read = not isinstance(graph_input, Command)
        segment_input = graph_input
        pause: _Pause | None = None
        while True:
            try:
                if not start_read:
                    start_id = await self._checkpoint_id(config)
                    start_read = True
                elif pause is not None:
                    segment_input, values = await self._continuation(config, graph_input, start_id, initial)
                    run_progress.values = values
                    log.warning("MongoDB answers again: %s continues from its last checkpoint", run.thread_id)
                    events.publish("resumed", {"reason": "mongodb_reachable"})
                return await self._stream(run, segment_input, config, events, run_progress)
            except Exception as exc:
                if self._outage is None or not is_unreachable(exc):
                    raise
                if pause is None or pause.nodes_finished != run_progress.nodes_finished:
                    pause = _Pause(self._outage.deadline(), run_progress.nodes_finished)
                    log.warning("MongoDB unreachable in %s (%s: %s); waiting up to %g s to continue from the "
                                "last checkpoint", run.thread_id, type(exc).__name__, str(exc)[:200],
                                self._outage.wait_seconds)
                    events.publish("paused", {"reason": "mongodb_unreachable", "error": type(exc).__name__,
                                              "wait_seconds": self._outage.wait_seconds})
                await self._outage.wait(pause.deadline)  # MongoUnavailableError past the deadline

    async def _checkpoint_id(self, config: RunnableConfig) -> str | None:
        snapshot = await self._graph.aget_state(config)
        return snapshot.config.get("configurable", {}).get("checkpoint_id") if snapshot.values else None

    async def _continuation(self, config: RunnableConfig, graph_input: Any, start_id: str | None,
                            initial: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """What to stream after an outage, and the state it starts from: the segment's own input
        while its first checkpoint is still the latest (nothing of it was saved), else None from
        the latest checkpoint (the steps after it run again)."""
        snapshot = await self._graph.aget_state(config)
        latest = snapshot.config.get("configurable", {}).get("checkpoint_id") if snapshot.values else None
        if latest == start_id:
            return graph_input, dict(initial)
        return None, dict(snapshot.values)

    async def _stream(self, run: RunIdentity, graph_input: Any, config: RunnableConfig, events: EventLog,
                      run_progress: RunProgress) -> RunOutcome:
        tracked = run_progress.values
        interrupt_value: dict[str, Any] | None = None
        interrupt_id: str | None = None
        started: dict[str, float] = {}
        # A new run says its first node started before LangGraph has read and written its first
        # checkpoints (three store round trips): Kotlin's first progress push waits for none of them.
        early = isinstance(graph_input, dict) and bool(graph_input.get("task"))
        if early:
            self._announce(run, ENTRY_NODE, tracked, events, run_progress)
        item: Any  # (namespace, mode, chunk); namespace () for the run's own nodes, ("run_goal:<task>",)
        # for a goal of a wave; chunk per mode: a task event, a node's update, a custom event
        async for item in self._graph.astream(
            graph_input, config, context=self._context, stream_mode=["tasks", "updates", "custom"],
            durability=DURABILITY, subgraphs=True,
        ):
            namespace, mode, chunk = item
            if namespace and mode != "custom":
                if mode == "tasks":
                    self._on_goal_task(run, chunk, tracked, events, run_progress)
                continue
            if mode == "tasks":
                announced = early and chunk.get("name") == ENTRY_NODE and "input" in chunk
                early = early and not announced
                self._on_task(run, chunk, tracked, events, started, run_progress, announced=announced)
                if "input" not in chunk:  # a task finished
                    run_progress.nodes_finished += 1
                    if run_progress.on_node_end is not None:
                        run_progress.on_node_end()
            elif mode == "updates":
                for node, update in chunk.items():
                    if node == "__interrupt__":
                        interrupt_value, interrupt_id = _interrupt_payload(update)
                    elif isinstance(update, dict):
                        merge_update(tracked, update)
            elif mode == "custom" and isinstance(chunk, dict):
                if chunk.get("type") == "agent_start":
                    run_progress.agent = progress.agent_label(str(chunk.get("agent")), chunk.get("program"))
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
        common: dict[str, Any] = {
            "branch": tracked.get("branch"),
            "artifacts": list(tracked.get("artifacts") or []),
            "step_results": list(tracked.get("step_results") or []),
        }
        if tracked.get("error"):
            return RunOutcome(status="error", error=str(tracked["error"]), report=tracked.get("final_result"),
                              percent=run_progress.percent, **common)
        return RunOutcome(status="done", summary=tracked.get("final_result"), percent=progress.DONE, **common)

    def _on_task(self, run: RunIdentity, chunk: dict[str, Any], tracked: dict[str, Any], events: EventLog,
                 started: dict[str, float], run_progress: RunProgress, *, announced: bool = False) -> None:
        """A node's start or end; `announced`: its start was already pushed (`_announce`)."""
        node = chunk.get("name")
        if node not in NODE_NAMES:
            return
        if "input" in chunk:  # a task start (finish events carry "result")
            started[chunk.get("id", node)] = time.perf_counter()
            current_scope().node = node  # LLM usage is booked to the running node
            if not announced:
                self._announce(run, node, tracked, events, run_progress)
        else:
            error = chunk.get("error")
            began = started.pop(chunk.get("id", node), None)
            duration = None
            if began is not None:
                seconds = time.perf_counter() - began
                self._metrics.node_finished(node, seconds, failed=bool(error))
                if (budget := current_scope().budget) is not None:
                    budget.record_node(node, seconds)
                duration = round(seconds * 1000, 2)
            events.publish("node_end", {"node": node, "duration_ms": duration,
                                        **({"error": str(error)} if error else {})})


    def _announce(self, run: RunIdentity, node: str, tracked: dict[str, Any], events: EventLog,
                  run_progress: RunProgress) -> None:
        """The progress push and SSE `node_start` of a node starting."""
        run_progress.node = node
        if node == "select_goal":
            run_progress.goals.clear()  # a new wave's goals report afresh
        goals, steps = tracked.get("goals") or [], tracked.get("steps") or []
        run_progress.percent = progress.monotonic(run_progress.percent, tracked, node)
        language = run_language(tracked, self._context.settings)
        message = progress.message(tracked, node, texts(language), language)
        if node == "execute_step" and (agent := self._step_agent(tracked)):
            message = f"{message.rstrip('…')} ({agent})"  # what runs it, e.g. "openhands → aider"
        push = ProgressPush(
            task_id=run.task_id, client_id=run.client_id, node=node, message=message, percent=run_progress.percent,
            goal_index=int(tracked.get("current_goal_index") or 0), total_goals=len(goals),
            step_index=int(tracked.get("current_step_index") or 0), total_steps=len(steps),
        )
        self._kotlin.push_progress_nowait(push)
        _publish_start(events, push, run_progress, texts(language), attempt=int(tracked.get("attempt") or 1))

    def _step_agent(self, tracked: dict[str, Any]) -> str:
        """What will run the current step when it is a code step ("" otherwise)."""
        steps = tracked.get("steps") or []
        index = int(tracked.get("current_step_index") or 0)
        step = steps[index] if 0 <= index < len(steps) else {}
        agent = step.get("agent_type") if step.get("step_type", "code") == "code" else None
        return progress.agent_label(agent, self._context.runner.program(agent)) if agent else ""

    def _on_goal_task(self, run: RunIdentity, chunk: dict[str, Any], tracked: dict[str, Any], events: EventLog,
                      run_progress: RunProgress) -> None:
        """A node of a goal running in a wave: its own progress push, named after the goal."""
        node, state = chunk.get("name"), chunk.get("input")
        if "input" not in chunk:
            run_progress.nodes_finished += 1
            return
        if node not in NODE_NAMES or not isinstance(state, dict) or (activity := activity_of(node, state)) is None:
            return
        run_progress.goals[activity.goal_id] = activity
        running = (tracked.get("wave") or {}).get("goals") or [activity.goal_id]
        shares = [run_progress.goals[g].share for g in running if g in run_progress.goals]
        run_progress.percent = max(run_progress.percent, progress.wave_percent(tracked, shares))
        language = run_language(tracked, self._context.settings)
        t = texts(language)
        title = clip(activity.title, TITLE_CHARS)
        push = ProgressPush(
            task_id=run.task_id, client_id=run.client_id, node=node,
            message=f"{title}: {progress.message(state, node, t, language)}", percent=run_progress.percent,
            goal_index=activity.index, total_goals=len(tracked.get("goals") or []),
            step_index=max(0, activity.step - 1), total_steps=activity.steps)
        self._kotlin.push_progress_nowait(push)
        _publish_start(events, push, run_progress, t, attempt=activity.attempt, goal_id=activity.goal_id)


def _publish_start(events: EventLog, push: ProgressPush, run_progress: RunProgress, t: Texts, *, attempt: int,
                   **more: str) -> None:
    """The SSE `node_start` of a progress push, with every goal's state in a plan of several goals."""
    states = run_progress.goal_states(t)
    events.publish("node_start", {"node": push.node, "message": push.message, "percent": push.percent,
                                  "goal_index": push.goal_index, "total_goals": push.total_goals,
                                  "step_index": push.step_index, "total_steps": push.total_steps,
                                  "attempt": attempt, **more, **({"goals": states} if states else {})})


def _interrupt_payload(update: Any) -> tuple[dict[str, Any], str | None]:
    """The value and id of the first pending interrupt (our nodes raise one at a time)."""
    interrupts = list(update) if isinstance(update, (list, tuple)) else [update]
    if not interrupts:
        return {"action": "unknown", "description": ""}, None
    value = getattr(interrupts[0], "value", interrupts[0])
    interrupt_id = getattr(interrupts[0], "id", None)
    payload = value if isinstance(value, dict) else {"action": "unknown", "description": str(value)}
    return payload, str(interrupt_id) if interrupt_id else None
