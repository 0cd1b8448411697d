"""Hierarchical context store (spec §12): per-run results outside the graph state.

Every LangGraph checkpoint stores the whole state, so step results, goal summaries and agent
outputs live here instead, keyed by ``(run_id, scope, scope_key)``: the run is the LangGraph
thread, because Kotlin reuses one task id for every request of a chat (keyed by the task, a
second request would overwrite the first run's entries and find its tracker records). A run's
final entry also carries the chat (``chat_id``, Kotlin's task id), so the next request in the
same chat can read what the previous one did (:meth:`ContextStore.previous_final`); nodes fetch compact
summaries (``assemble_*``) and the full ``detail`` only on demand. Entries expire via a TTL
index ``ttl_days`` after their last write. Every string written passes the service's redaction
(agent log tails and failure texts may quote a secret).
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from app.observability.redaction import no_redaction, redact_data

logger = logging.getLogger(__name__)

COLLECTION_NAME = "orchestrator_context"

Scope = Literal["step", "goal", "epic", "task", "agent_result", "tracker"]
"""`tracker`: one entry per tracker operation, its idempotency key and answer (app/graph/rules/tracker_ops.py)."""
Document = dict[str, Any]

_KEY_FIELDS = ("run_id", "scope", "scope_key")
#: The unique key before entries belonged to runs.
_OLD_KEY_FIELDS = ("task_id", "scope", "scope_key")
_DIGITS = re.compile(r"(\d+)")


def _utcnow() -> datetime:
    return datetime.now(UTC)


def natural_key(scope_key: str) -> tuple[Any, ...]:
    """Sort key that orders "goal/10" after "goal/9" (plain string order would not)."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(scope_key))


class ContextEntry(BaseModel):
    run_id: str
    """The LangGraph thread the entry belongs to."""
    chat_id: str | None = None
    """Kotlin's task id (one chat), on a run's final entry."""
    scope: Scope
    scope_key: str
    summary: str
    detail: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime

    @field_validator("created_at")
    @classmethod
    def _assume_utc(cls, value: datetime) -> datetime:
        """A client without tz_aware returns naive datetimes; BSON datetimes are always UTC."""
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class ContextStore:
    def __init__(
        self,
        collection: AsyncCollection[Document],
        *,
        ttl_days: int = 30,
        clock: Callable[[], datetime] = _utcnow,
        redact: Callable[[str], str] = no_redaction,
    ) -> None:
        self._collection = collection
        self._redact = redact
        self._ttl = timedelta(days=ttl_days)
        self._clock = clock
        self._pending: set[asyncio.Task[None]] = set()
        # Latest background save per key, so two save_nowait calls for one key land in call order.
        self._last_save: dict[tuple[str, str, str], asyncio.Task[None]] = {}

    async def setup(self) -> None:
        """Create the unique key index, the chat index and the TTL index (idempotent). Entries
        written before runs owned them are renamed in place (``task_id`` -> ``run_id``)."""
        indexes = await (await self._collection.list_indexes()).to_list()
        for index in indexes:
            if tuple(index["key"]) == _OLD_KEY_FIELDS:  # by its fields: nx-27017 names indexes its own way
                await self._collection.drop_index(index["name"])
                await self._collection.update_many({"run_id": {"$exists": False}},
                                                   {"$rename": {"task_id": "run_id"}})
        await self._collection.create_index(
            [(name, 1) for name in _KEY_FIELDS], unique=True, name="run_scope_key_unique"
        )
        await self._collection.create_index([("chat_id", 1), ("created_at", -1)], sparse=True, name="chat_created")
        await self._collection.create_index("expire_at", expireAfterSeconds=0, name="expire_at_ttl")

    # --- writes -------------------------------------------------------------------------------

    async def save(
        self,
        run_id: str,
        scope: Scope,
        scope_key: str,
        summary: str,
        detail: dict[str, Any] | None = None,
        *,
        chat_id: str | None = None,
    ) -> None:
        """Upsert one entry: keeps ``created_at`` of the first write, pushes ``expire_at`` out."""
        now = self._clock()
        key = {"run_id": run_id, "scope": scope, "scope_key": scope_key}
        fields: Document = {"summary": self._redact(summary), "detail": redact_data(self._redact, detail or {}),
                            "expire_at": now + self._ttl}
        if chat_id is not None:
            fields["chat_id"] = chat_id
        update = {
            "$set": fields,
            "$setOnInsert": {"created_at": now},
        }
        try:
            await self._collection.update_one(key, update, upsert=True)
        except DuplicateKeyError:
            # Two concurrent upserts of a new key: the loser now finds the document and updates it.
            await self._collection.update_one(key, update, upsert=True)

    async def save_safely(
        self,
        run_id: str,
        scope: Scope,
        scope_key: str,
        summary: str,
        detail: dict[str, Any] | None = None,
    ) -> bool:
        """:meth:`save`, awaited by a caller that reads the entry back soon, but never failing
        it: the context store is an aid, and a run goes on without it (the error is logged)."""
        try:
            await self.save(run_id, scope, scope_key, summary, detail)
        except Exception:
            logger.exception("context store: saving %s/%s/%s failed", run_id, scope, scope_key)
            return False
        return True

    def save_nowait(
        self,
        run_id: str,
        scope: Scope,
        scope_key: str,
        summary: str,
        detail: dict[str, Any] | None = None,
        *,
        chat_id: str | None = None,
    ) -> None:
        """Schedule :meth:`save` in a tracked background task, off the caller's critical path.

        Errors are logged, not raised; :meth:`drain` waits for all pending saves. Must be called
        from a running event loop.
        """
        key = (run_id, scope, scope_key)
        previous = self._last_save.get(key)
        task = asyncio.create_task(
            self._save_after(previous, run_id, scope, scope_key, summary, detail, chat_id),
            name=f"context-save:{run_id}:{scope}:{scope_key}",
        )
        self._pending.add(task)
        self._last_save[key] = task
        task.add_done_callback(lambda done: self._forget(key, done))

    async def _save_after(
        self,
        previous: asyncio.Task[None] | None,
        run_id: str,
        scope: Scope,
        scope_key: str,
        summary: str,
        detail: dict[str, Any] | None,
        chat_id: str | None,
    ) -> None:
        if previous is not None:
            await asyncio.wait([previous])
        try:
            await self.save(run_id, scope, scope_key, summary, detail, chat_id=chat_id)
        except Exception:
            logger.exception("background context save failed: %s %s %s", run_id, scope, scope_key)

    def _forget(self, key: tuple[str, str, str], task: asyncio.Task[None]) -> None:
        self._pending.discard(task)
        if self._last_save.get(key) is task:
            del self._last_save[key]

    async def drain(self) -> None:
        """Wait until every background save (including ones scheduled meanwhile) has finished."""
        while self._pending:
            # asyncio.wait, unlike gather, does not cancel the saves if drain itself is cancelled.
            await asyncio.wait(set(self._pending))

    # --- reads --------------------------------------------------------------------------------

    async def get(self, run_id: str, scope: Scope, scope_key: str) -> ContextEntry | None:
        doc = await self._collection.find_one({"run_id": run_id, "scope": scope, "scope_key": scope_key})
        return ContextEntry.model_validate(doc) if doc is not None else None

    async def previous_final(self, chat_id: str, *, before_run: str) -> ContextEntry | None:
        """The final entry of the newest other run in the same chat: what the request before this
        one ended with."""
        query: Document = {"chat_id": chat_id, "scope": "task", "scope_key": "final", "run_id": {"$ne": before_run}}
        async for doc in self._collection.find(query).sort("created_at", -1).limit(1):
            return ContextEntry.model_validate(doc)
        return None

    async def list(self, run_id: str, scope: Scope | None = None) -> builtins.list[ContextEntry]:
        """Entries of a run (optionally one scope), in natural ``scope_key`` order."""
        query: Document = {"run_id": run_id}
        if scope is not None:
            query["scope"] = scope
        return await self._find_sorted(query)

    async def _find_sorted(self, query: Document) -> builtins.list[ContextEntry]:
        # Sorted here, not by MongoDB: natural order, and a task has only tens of entries.
        entries = [ContextEntry.model_validate(doc) async for doc in self._collection.find(query)]
        return sorted(entries, key=lambda entry: (natural_key(entry.scope_key), entry.scope))

    # --- domain helpers (spec §12.2 keys) -------------------------------------------------------

    @staticmethod
    def step_key(goal_index: int, step_index: int) -> str:
        return f"goal/{goal_index}/step/{step_index}"

    @staticmethod
    def goal_key(goal_index: int) -> str:
        return f"goal/{goal_index}"

    async def assemble_epic_review_context(self, run_id: str) -> str:
        """One ``goal/<i>: summary`` line per goal: the epic review needs names/status only."""
        return "\n".join(_line(e, bullet="") for e in await self.list(run_id, "goal"))


def _line(entry: ContextEntry, bullet: str = "- ") -> str:
    return f"{bullet}{entry.scope_key}: {' '.join(entry.summary.split())}"
