"""What people read about runs (`GET /runs`, `GET /runs/{thread_id}`, its diff): the run records
joined with what this pod knows live (a run executing here is ahead of its record) and, for one
run, its checkpoint. Reads only: every action goes through the run manager."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.pregel import Pregel
from langgraph.types import PregelTask

from app.agents.snapshots import WorkspaceSnapshots
from app.agents.workspace import WorkspaceManager
from app.graph.state_access import Position
from app.persistence.runs import RunRecord, RunStatus, RunStore
from app.runs.detail import run_detail
from app.runs.diffs import run_diff
from app.runs.errors import RunNotFoundError
from app.runs.events import EventHub
from app.runs.lifecycle import RunDriver
from app.runs.manager import RunManager
from app.runs.status import record_of, run_summary
from app.schemas.runs import RunDetail, RunDiff, RunList


class RunViews:
    def __init__(self, *, manager: RunManager, runs: RunStore, graph: Pregel[Any, Any, Any, Any], driver: RunDriver,
                 events: EventHub, workspaces: WorkspaceManager, snapshots: WorkspaceSnapshots | None = None) -> None:
        self._manager = manager
        self._runs = runs
        self._graph = graph
        self._driver = driver
        self._events = events
        self._workspaces = workspaces
        self._snapshots = snapshots or WorkspaceSnapshots()

    async def recent(self, limit: int, status: RunStatus | None = None) -> RunList:
        """The latest runs, newest first, as this pod knows them; `status` keeps only runs in it
        ("interrupted" is a run waiting for its user)."""
        records = await self._runs.recent(limit, status)
        return RunList(runs=[run_summary(self._as_known_here(record)) for record in records])

    async def detail(self, thread_id: str) -> RunDetail:
        record = await self._runs.get(thread_id)
        if record is None:
            raise RunNotFoundError(f"No orchestration {thread_id}")
        run = self._manager.live(thread_id)
        running = run is not None and run.outcome is None
        snapshot = await self._graph.aget_state(self._driver.config(thread_id))
        values = dict(snapshot.values or {})
        goals_in_wave = await self._wave_goals(thread_id, snapshot.tasks) if values.get("wave") else {}
        node = run.progress.node if running and run is not None else None
        return run_detail(self._as_known_here(record), values, node=node, running=running,
                          live=self._events.get(thread_id) is not None, goals_in_wave=goals_in_wave)

    def _as_known_here(self, record: RunRecord) -> RunRecord:
        """The record as this pod knows it: a run executing here shows its live percent (its record
        trails it by up to a node); one that just ended here, its outcome (its record may not be
        written yet), with what only the record holds."""
        run = self._manager.live(record.thread_id)
        if run is None:
            return record
        if run.outcome is None:
            return record.model_copy(update={"percent": max(record.percent, run.progress.percent)})
        return record_of(run.identity, run.outcome).model_copy(update={
            "created_at": record.created_at, "updated_at": record.updated_at, "request": record.request,
            "answer": record.answer, "usage": run.outcome.usage or record.usage})

    async def diff(self, thread_id: str) -> RunDiff:
        values = await self._values(thread_id)
        if not values:
            record = await self._runs.get(thread_id)
            if record is not None and record.checkpoints_deleted_at is not None:
                raise RunNotFoundError(f"{thread_id} ended long ago: its checkpoints, and with them its diff, were "
                                       "deleted (CHECKPOINT_RETENTION_DAYS)")
            raise RunNotFoundError(f"No orchestration {thread_id}")
        return await run_diff(self._snapshots, self._workspaces, values)

    async def _wave_goals(self, thread_id: str, tasks: Sequence[PregelTask]) -> dict[str, dict[str, Any]]:
        """Each running goal's own state (its subgraph's latest checkpoint, by goal id): the steps
        and attempts of goals of a wave live there until the wave is merged."""
        saver = self._graph.checkpointer
        if not isinstance(saver, BaseCheckpointSaver):
            return {}
        found: dict[str, dict[str, Any]] = {}
        for task in tasks:
            if task.name != "run_goal":
                continue
            config = self._driver.config(thread_id)
            config["configurable"] = {**config.get("configurable", {}), "checkpoint_ns": f"run_goal:{task.id}"}
            saved = await saver.aget_tuple(config)
            state = dict(saved.checkpoint.get("channel_values") or {}) if saved else {}
            goals, index = Position.of(state).goals or [], int(Position.of(state).current_goal_index or 0)
            if 0 <= index < len(goals):
                found[str(goals[index].get("id"))] = state
        return found

    async def _values(self, thread_id: str) -> dict[str, Any]:
        """The run's state at its latest checkpoint (the source of truth, on any pod)."""
        return dict((await self._graph.aget_state(self._driver.config(thread_id))).values or {})
