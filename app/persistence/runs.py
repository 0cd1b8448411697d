"""Run registry: one small document per orchestration (``_id`` = LangGraph thread id).

/status answers from it without loading a checkpoint, and crash recovery finds runs a dead pod
left ``running``. Times are epoch floats: exact on every backend, nx-27017 included.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

COLLECTION_NAME = "orchestrator_runs"

RunStatus = Literal["running", "interrupted", "done", "error"]
Document = dict[str, Any]


class RunRecord(BaseModel):
    thread_id: str
    task_id: str
    client_id: str
    status: RunStatus
    pod_id: str | None = None
    summary: str | None = None
    error: str | None = None
    interrupt_action: str | None = None
    interrupt_description: str | None = None
    branch: str | None = None
    artifacts: list[str] = []
    cloud_approved: bool = False
    language: str | None = None
    """The run's language, known at its start: a run that ends before its first checkpoint is told in it."""
    request: str | None = None
    """The request's first line (clipped): what a list of runs shows of it."""
    usage: dict[str, Any] = {}
    percent: float = 0.0
    """Highest progress reported (100 when done)."""
    report: str | None = None
    """Full report of a failed run: what was finished, committed, skipped and left (`error` is its bounded form)."""
    interrupt_id: str | None = None
    """The LangGraph interrupt an `interrupted` run waits on: part of its status push's identity."""
    answer: dict[str, Any] | None = None
    """The last answer to a question that was taken: `interrupt_id`, `interrupt_action`, `approved`,
    `answered_at` (epoch) and `pod_id` (which pod took it); a second answer is refused with it (409)."""
    announced: bool = True
    """False from the moment an outcome is recorded until recovery's sweep has seen its status push in the
    outbox (marked then) or, a crash having lost it, pushed it again (records without it were announced)."""
    pending: dict[str, Any] | None = None
    """The request as accepted (redacted like a checkpoint), kept until the run records its first outcome:
    recovery starts a run whose pod died before its first checkpoint from here instead of ending it."""
    restarts: int = 0
    """How often recovery started the run afresh from `pending` (once at most: a request that kills its pod
    before the first checkpoint again is ended, not retried forever)."""
    checkpoints_deleted_at: float | None = None
    """When retention deleted the run's checkpoints (`app/runs/retention.py`), long after it ended: the record
    is all that is left of it."""
    fence: str | None = None
    """Fencing token of the lock lease under which the run's pod (`pod_id`) runs it; its outcome write is
    conditional on it, so a pod that lost the run to another cannot overwrite it."""
    created_at: float
    updated_at: float


#: What reads leave out but recovery's: the stored request (up to a megabyte) only a restart needs,
#: not /status, a list, an answer or an announcement.
WITHOUT_REQUEST = {"pending": 0}

# Fields update() may change: identity and timestamps are managed by the store.
_UPDATABLE = frozenset(RunRecord.model_fields) - {"thread_id", "created_at", "updated_at"}


class RunStore:
    def __init__(self, collection: AsyncCollection[Document], *, clock: Callable[[], float] = time.time) -> None:
        self._collection = collection
        self._clock = clock

    async def setup(self) -> None:
        """Indexes for the lookups besides _id: by status (recovery), by task (/status) and the
        newest first (`GET /runs`)."""
        await self._collection.create_index("status", name="status")
        await self._collection.create_index("task_id", name="task_id")
        await self._collection.create_index("updated_at", name="updated_at")
        await self._collection.create_index("announced", name="announced")

    async def create(self, record: RunRecord) -> None:
        """Upsert the run; a re-created run (e.g. a restarted thread) keeps its first created_at."""
        fields = record.model_dump(exclude={"thread_id", "created_at"})
        await self._collection.update_one(
            {"_id": record.thread_id},
            {"$set": fields, "$setOnInsert": {"created_at": record.created_at}},
            upsert=True,
        )

    async def update(self, thread_id: str, *, if_fence: str | None = None, **fields: Any) -> bool:
        """Set ``fields`` (validated against RunRecord) and bump updated_at; with ``if_fence``,
        only while the run's fencing token is that one.

        Returns whether the run exists (and was still fenced by ``if_fence``). Unknown or
        immutable field names raise ValueError, and so do invalid values (pydantic
        ValidationError is a ValueError).
        """
        values = self._validated(fields)
        condition = {"_id": thread_id} | ({"fence": if_fence} if if_fence is not None else {})
        result = await self._collection.update_one(condition, {"$set": {**values, "updated_at": self._clock()}})
        return result.matched_count > 0

    async def upsert(self, thread_id: str, *, task_id: str, client_id: str, pod_id: str | None = None,
                     created_at: float | None = None, if_fence: str | None = None, **fields: Any) -> bool:
        """Set ``fields`` like update(), creating the run with its identity if it is missing (its
        create was lost to an outage): an outcome always lands, findable by thread and task.

        With ``if_fence`` the write lands only on a record still holding that fencing token (or
        on none, created with it); a record naming another token was taken over by another pod,
        and False says so (the insert the upsert attempts then meets the existing _id)."""
        values = self._validated(fields)
        now = self._clock()
        identity = {"task_id": task_id, "client_id": client_id, "pod_id": pod_id,
                    "created_at": now if created_at is None else created_at}
        condition: Document = {"_id": thread_id}
        if if_fence is not None:
            condition["fence"] = if_fence
            identity["fence"] = if_fence
        try:
            await self._collection.update_one(
                condition,
                {"$set": {**values, "updated_at": now},
                 "$setOnInsert": {name: value for name, value in identity.items() if name not in values}},
                upsert=True,
            )
        except DuplicateKeyError:
            if if_fence is None:
                raise
            return False
        return True

    async def record_progress(self, thread_id: str, *, pod_id: str, usage: dict[str, Any], percent: float) -> bool:
        """Usage and percent of a run executing on ``pod_id``, written as it goes (a crash then
        loses no segment's usage). Only while the run is still ``running`` there: a late write
        never touches a run that ended or that another pod took over. Returns whether it did."""
        values = self._validated({"usage": usage, "percent": percent})
        result = await self._collection.update_one(
            {"_id": thread_id, "status": "running", "pod_id": pod_id},
            {"$set": {**values, "updated_at": self._clock()}},
        )
        return result.matched_count > 0

    async def transition(self, thread_id: str, *, from_status: RunStatus, **fields: Any) -> bool:
        """Set ``fields`` only if the run is still in ``from_status`` (atomic compare-and-set):
        of two requests racing to resume, or to resume and cancel, exactly one wins."""
        values = self._validated(fields)
        doc = await self._collection.find_one_and_update(
            {"_id": thread_id, "status": from_status}, {"$set": {**values, "updated_at": self._clock()}}
        )
        return doc is not None

    async def claim(self, thread_id: str, *, from_pod: str | None, to_pod: str, fence: str | None = None) -> bool:
        """Atomically move a running run from a dead pod to this one, under the new owner's
        fencing token: of several pods that try to recover the same run, exactly one wins."""
        doc = await self._collection.find_one_and_update(
            {"_id": thread_id, "status": "running", "pod_id": from_pod},
            {"$set": {"pod_id": to_pod, "fence": fence, "updated_at": self._clock()}},
        )
        return doc is not None

    @staticmethod
    def _validated(fields: dict[str, Any]) -> dict[str, Any]:
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise ValueError(f"cannot update run fields: {sorted(unknown)}")
        validated = RunRecord.model_construct()  # type: ignore[call-arg]  # empty: only `fields` are set below
        for name, value in fields.items():
            RunRecord.__pydantic_validator__.validate_assignment(validated, name, value)
        return {name: getattr(validated, name) for name in fields}

    async def get(self, thread_id: str) -> RunRecord | None:
        """The run without its stored request (`pending`: read by recovery's `list_by_status` only)."""
        doc = await self._collection.find_one({"_id": thread_id}, WITHOUT_REQUEST)
        return _record(doc) if doc is not None else None

    async def list_by_status(self, status: RunStatus) -> list[RunRecord]:
        """Runs in one status, oldest first, with their stored requests (recovery restarts from them)."""
        records = [_record(doc) async for doc in self._collection.find({"status": status})]
        return sorted(records, key=lambda record: record.created_at)

    async def list_unannounced(self, *, updated_before: float) -> list[RunRecord]:
        """Ended runs whose status push was never stored (a crash between the two writes), last
        written before ``updated_before`` (a pod announcing right now is left to finish)."""
        cursor = self._collection.find({"announced": False, "updated_at": {"$lt": updated_before},
                                        "status": {"$in": ["done", "error", "interrupted"]}}, WITHOUT_REQUEST)
        return [_record(doc) async for doc in cursor]

    async def mark_announced(self, thread_ids: list[str]) -> None:
        """Their status pushes are in the outbox: recovery need not announce them."""
        if thread_ids:
            await self._collection.update_many({"_id": {"$in": thread_ids}}, {"$set": {"announced": True}})

    async def ended_with_checkpoints(self, *, before: float, limit: int) -> list[str]:
        """Threads of runs that ended (done or error; an interrupted one waits on its checkpoint) with
        their last write before ``before`` and their checkpoints not yet deleted."""
        cursor = self._collection.find({"status": {"$in": ["done", "error"]}, "updated_at": {"$lt": before},
                                        "checkpoints_deleted_at": None}, {"_id": 1}).limit(limit)
        return [str(doc["_id"]) async for doc in cursor]

    async def mark_checkpoints_deleted(self, thread_ids: list[str], at: float) -> None:
        """Retention deleted their checkpoints (`updated_at` stays: the list's order is the runs')."""
        if thread_ids:
            await self._collection.update_many({"_id": {"$in": thread_ids}}, {"$set": {"checkpoints_deleted_at": at}})

    async def recent(self, limit: int, status: RunStatus | None = None) -> list[RunRecord]:
        """The `limit` most recently updated runs (in `status`, when given), newest first (ties: the
        later thread id first, so the order is stable)."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        query = {"status": status} if status else {}
        cursor = self._collection.find(query, WITHOUT_REQUEST).sort([("updated_at", -1), ("_id", -1)]).limit(limit)
        return [_record(doc) async for doc in cursor]


def _record(doc: Document) -> RunRecord:
    return RunRecord.model_validate({**doc, "thread_id": doc["_id"]})
