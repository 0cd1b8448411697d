"""Write and read concern (issue 24): majority writes (journaled) and majority reads by default,
configurable, on every collection the lock, the run records, the outbox and the checkpointer use.

nx-27017 accepts every write and read concern and ignores them, so these tests show that the
options reach the driver and the wire and that nx-27017 takes them; what they mean is MongoDB's.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, TypedDict

import pytest
from fastapi import FastAPI
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.mongodb import MongoDBSaver
from langgraph.graph import END, START, StateGraph
from pydantic import ValidationError
from pymongo import AsyncMongoClient, MongoClient, monitoring

import app.lifespan as lifespan_module
from app.config import Settings
from app.dev.embedded_mongo import EmbeddedMongo
from app.persistence import lock as lock_module
from app.persistence import mongo as mongo_module
from app.persistence import outbox as outbox_module
from app.persistence import runs as runs_module
from app.persistence.lock import OrchestrationLock
from app.persistence.mongo import MongoConcerns, create_client, create_sync_client
from app.persistence.outbox import OutboxItem, OutboxStore
from app.persistence.runs import RunRecord, RunStore
from tests.fixtures.kb_server import FakeKbServer
from tests.fixtures.kotlin_server import FakeKotlinServer

MAJORITY_WRITE = {"w": "majority", "j": True}
WRITES = {"insert", "update", "delete", "findAndModify", "createIndexes"}
READS = {"find", "aggregate"}


def test_defaults_are_journaled_majority_writes_and_majority_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MONGODB_WRITE_CONCERN", "MONGODB_READ_CONCERN"):
        monkeypatch.delenv(name, raising=False)
    options = MongoConcerns.from_settings(Settings()).options()
    assert options == {"w": "majority", "journal": True, "readConcernLevel": "majority"}
    assert MongoConcerns().options() == options  # what a client made without settings gets


def test_the_settings_take_a_member_count_and_refuse_what_is_no_write_concern(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONGODB_WRITE_CONCERN", "2")
    monkeypatch.setenv("MONGODB_READ_CONCERN", "linearizable")
    assert MongoConcerns.from_settings(Settings()).options() == {"w": 2, "journal": True,
                                                                 "readConcernLevel": "linearizable"}
    for bad in ("0", "fast", "majority,1"):  # w=0 would make every write unacknowledged
        with pytest.raises(ValidationError):
            Settings(mongodb_write_concern=bad)
    with pytest.raises(ValidationError):
        Settings(mongodb_read_concern="snapshot")  # type: ignore[arg-type]


def _concerns_of(collection: Any) -> tuple[dict[str, Any], str | None]:
    return collection.write_concern.document, collection.read_concern.level


@pytest.mark.parametrize(("write", "read", "expected_w"), [("majority", "majority", "majority"), ("1", "local", 1)])
async def test_the_lifespan_gives_its_concerns_to_the_lock_runs_outbox_and_checkpointer(
    mongo_server: EmbeddedMongo, mongo_db_name: str, kotlin: FakeKotlinServer, kb: FakeKbServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, write: str, read: str, expected_w: str | int,
) -> None:
    """The real lifespan, started in this process: the collections it hands the stores and the
    checkpointer's collections carry the configured concerns (a non-default pair shows they come
    from the settings, not from the factories' defaults)."""
    handed: dict[str, Any] = {}

    def spy(cls: Any) -> Any:
        @functools.wraps(cls)
        def build(collection: Any, *args: Any, **kwargs: Any) -> Any:
            handed[cls.__name__] = collection
            return cls(collection, *args, **kwargs)
        return build

    for cls in (OrchestrationLock, RunStore, OutboxStore):
        monkeypatch.setattr(lifespan_module, cls.__name__, spy(cls))

    def saver(client: MongoClient[Any], **kwargs: Any) -> MongoDBSaver:
        built = MongoDBSaver(client, **kwargs)
        handed["checkpoints"], handed["checkpoint_writes"] = built.checkpoint_collection, built.writes_collection
        return built

    monkeypatch.setattr(lifespan_module, "MongoDBSaver", saver)
    app = FastAPI()
    app.state.settings = Settings(
        mongodb_url=mongo_server.url, mongodb_database=mongo_db_name, checkpoint_database=f"{mongo_db_name}_cp",
        mongodb_write_concern=write, mongodb_read_concern=read,  # type: ignore[arg-type]
        pod_id="concerns-pod", data_root=tmp_path, kotlin_server_url=kotlin.url, knowledgebase_url=kb.url,
    )
    async with lifespan_module.lifespan(app):
        concerns = {name: _concerns_of(collection) for name, collection in handed.items()}

    expected = ({"w": expected_w, "j": True}, read)
    assert concerns == dict.fromkeys(
        ["OrchestrationLock", "RunStore", "OutboxStore", "checkpoints", "checkpoint_writes"], expected)
    assert handed["OrchestrationLock"].name == lock_module.COLLECTION_NAME
    assert handed["RunStore"].name == runs_module.COLLECTION_NAME
    assert handed["OutboxStore"].name == outbox_module.COLLECTION_NAME


class Wire(monitoring.CommandListener):
    """What the clients sent, and which commands the server refused."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.refused: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.sent.append((event.command_name, dict(event.command)))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self.refused.append(f"{event.command_name}: {event.failure}")


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    """The factories' clients, each with a listener on its commands."""
    listener = Wire()
    monkeypatch.setattr(mongo_module, "AsyncMongoClient", functools.partial(AsyncMongoClient,
                                                                             event_listeners=[listener]))
    monkeypatch.setattr(mongo_module, "MongoClient", functools.partial(MongoClient, event_listeners=[listener]))
    return listener


class State(TypedDict):
    value: str


async def test_majority_writes_and_reads_of_every_store_work_on_nx_27017(
    mongo_server: EmbeddedMongo, mongo_db_name: str, wire: Wire, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the default settings, built as the lifespan builds them: a lock acquire, run record
    writes (a fenced one too), an outbox claim and a checkpoint each go out with the majority
    write or read concern, nx-27017 answers every one of them, and what was written reads back."""
    for name in ("MONGODB_WRITE_CONCERN", "MONGODB_READ_CONCERN"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(mongodb_url=mongo_server.url, mongodb_database=mongo_db_name,
                        checkpoint_database=f"{mongo_db_name}_cp")
    concerns = MongoConcerns.from_settings(settings)
    mongo = create_client(settings.mongodb_url, concerns=concerns)
    sync_mongo = create_sync_client(settings.mongodb_url, concerns=concerns)
    try:
        db = mongo[settings.mongodb_database]
        lock = OrchestrationLock(db[lock_module.COLLECTION_NAME], pod_id="pod-a", slots=1)
        runs = RunStore(db[runs_module.COLLECTION_NAME])
        outbox = OutboxStore(db[outbox_module.COLLECTION_NAME], pod_id="pod-a")
        for store in (lock, runs, outbox):
            await store.setup()

        lease = await lock.acquire("thread-1")
        assert lease is not None
        assert (await lock.holder("thread-1") or {}).get("locked_by") == "pod-a"
        await runs.create(RunRecord(thread_id="thread-1", task_id="task-1", client_id="c", status="running",
                                    pod_id="pod-a", fence=lease.token, created_at=1.0, updated_at=1.0))
        assert await runs.update("thread-1", if_fence=lease.token, summary="fenced")
        assert not await runs.update("thread-1", if_fence="orchestration_slot_0#99", summary="stale owner")
        assert await runs.transition("thread-1", from_status="running", status="done")
        record = await runs.get("thread-1")
        assert record is not None and (record.status, record.summary) == ("done", "fenced")
        await lease.release()

        item = OutboxItem(id="status:thread-1", order_key="task-1", kind="status", path="/status", body={"ok": 1},
                          key="k-1", seq=1, created_at=1.0, expires_at=4102444800.0)
        assert await outbox.add(item)
        scanned = await outbox.scan(10)
        assert [pending.id for pending in scanned] == [item.id]
        claimed = await outbox.claim(scanned[0])
        assert claimed is not None and claimed.body == {"ok": 1}
        await outbox.delivered(claimed)
        assert (await outbox.get(item.id) or {}).get("state") == outbox_module.DELIVERED
        assert (await outbox.stats()).depth == 0

        builder = StateGraph(State)
        builder.add_node("step", lambda state: {"value": state["value"] + "-stepped"})
        builder.add_edge(START, "step")
        builder.add_edge("step", END)
        saver = MongoDBSaver(sync_mongo, db_name=settings.checkpoint_database)
        config: RunnableConfig = {"configurable": {"thread_id": "thread-1"}}
        builder.compile(checkpointer=saver).invoke(State(value="run"), config)
        fresh = MongoDBSaver(sync_mongo, db_name=settings.checkpoint_database)  # nothing cached
        assert builder.compile(checkpointer=fresh).get_state(config).values == {"value": "run-stepped"}
    finally:
        await mongo.close()
        sync_mongo.close()

    assert wire.refused == []
    writes = [(name, command.get("writeConcern")) for name, command in wire.sent if name in WRITES]
    reads = [(name, command.get("readConcern")) for name, command in wire.sent if name in READS]
    assert {name for name, _ in writes} >= {"insert", "update", "findAndModify", "createIndexes"}
    assert {name for name, _ in reads} == READS
    assert [entry for entry in writes if entry[1] != MAJORITY_WRITE] == [], json.dumps(writes, default=str)
    assert [entry for entry in reads if entry[1] != {"level": "majority"}] == [], json.dumps(reads, default=str)
