"""§20.3 indexes on the Kotlin server's collections, against a real nx-27017."""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from app.persistence.indexes import KOTLIN_INDEXES, ensure_indexes

Db = AsyncDatabase[dict[str, Any]]


async def index_keys(db: Db, collection: str) -> set[tuple[tuple[str, int], ...]]:
    return {tuple((k, int(v)) for k, v in index["key"].items())
            async for index in await db[collection].list_indexes()}


async def test_every_index_of_the_spec_is_created_once(mongo_db: Db) -> None:
    created = await ensure_indexes(mongo_db, KOTLIN_INDEXES)
    assert len(created) == sum(len(indexes) for indexes in KOTLIN_INDEXES.values()) == 9
    assert (("taskId", 1), ("sequence", 1)) in await index_keys(mongo_db, "chat_messages")
    assert (("correlationId", 1),) in await index_keys(mongo_db, "chat_messages")
    assert (("taskId", 1), ("sequenceEnd", 1)) in await index_keys(mongo_db, "chat_summaries")
    assert {(("state", 1),), (("clientId", 1),), (("projectId", 1),), (("type", 1),)} <= await index_keys(
        mongo_db, "tasks")
    assert await ensure_indexes(mongo_db, KOTLIN_INDEXES) == []  # a restart changes nothing


async def test_an_index_the_kotlin_server_made_under_its_own_name_is_kept(mongo_db: Db) -> None:
    await mongo_db["tasks"].create_index([("state", 1)], name="state_idx_by_spring")
    created = await ensure_indexes(mongo_db, {"tasks": ((("state", 1),), (("type", 1),))})
    assert created == ["tasks.type_1"]
    # (Real MongoDB refuses the same keys under a second name; nx-27017 renames indexes itself.)
    keys = [tuple(index["key"]) async for index in await mongo_db["tasks"].list_indexes()]
    assert sorted(keys) == [("_id",), ("state",), ("type",)]
