"""Indexes of spec §20.3 on the collections the Kotlin server writes (chat history, tasks).

The orchestrator's own collections create their indexes in their stores' `setup()` and the
checkpointer in `MongoDBSaver`; these three belong to the Kotlin server's database and are
ensured only when `KOTLIN_MONGODB_DATABASE` names it. An index whose keys already exist (under
any name, e.g. one Spring Data created) is left alone, so start-up never fails on a name clash
and running it on every start is a no-op.
"""

from __future__ import annotations

import logging
from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

log = logging.getLogger(__name__)

IndexKeys = tuple[tuple[str, int], ...]

KOTLIN_INDEXES: dict[str, tuple[IndexKeys, ...]] = {
    "chat_messages": ((("taskId", 1), ("sequence", 1)), (("taskId", 1),), (("correlationId", 1),)),
    "chat_summaries": ((("taskId", 1), ("sequenceEnd", 1)), (("taskId", 1),)),
    "tasks": ((("state", 1),), (("clientId", 1),), (("projectId", 1),), (("type", 1),)),
}


async def ensure_indexes(db: AsyncDatabase[Any], wanted: dict[str, tuple[IndexKeys, ...]]) -> list[str]:
    """Create the missing indexes; return the names of those created."""
    created: list[str] = []
    for collection_name, indexes in wanted.items():
        collection = db[collection_name]
        existing = {tuple(index["key"].items()) async for index in await collection.list_indexes()}
        for keys in indexes:
            if tuple(keys) in existing:
                continue
            created.append(f"{collection_name}.{await collection.create_index(list(keys))}")
    if created:
        log.info("created MongoDB indexes in %s: %s", db.name, ", ".join(created))
    return created
