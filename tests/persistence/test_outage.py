"""Waiting out a MongoDB outage, against a real nx-27017 stopped and started again."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from pymongo.errors import (
    AutoReconnect,
    DuplicateKeyError,
    NetworkTimeout,
    OperationFailure,
    ServerSelectionTimeoutError,
)

from app.persistence.mongo import MongoTimeouts, create_client, is_unreachable, ping
from app.persistence.outage import MongoOutage, MongoUnavailableError
from tests.fixtures.mongo import RestartableMongo

FAST = MongoTimeouts(connect_seconds=0.3, socket_seconds=2.0)


@pytest.fixture
async def client(restartable_mongo: RestartableMongo) -> AsyncIterator[AsyncMongoClient[dict[str, Any]]]:
    mongo = create_client(restartable_mongo.url, timeouts=FAST)
    yield mongo
    await mongo.close()


def chained(cause: BaseException) -> RuntimeError:
    try:
        raise RuntimeError("wrapped") from cause
    except RuntimeError as exc:
        return exc


@pytest.mark.parametrize("error", [ServerSelectionTimeoutError("no server"), AutoReconnect("reset"),
                                   NetworkTimeout("slow"), chained(AutoReconnect("reset"))])
def test_connection_class_errors_are_unreachable(error: BaseException) -> None:
    assert is_unreachable(error)


@pytest.mark.parametrize("error", [DuplicateKeyError("dup"), OperationFailure("bad query"), ValueError("no"),
                                   chained(ValueError("no"))])
def test_other_errors_are_not_unreachable(error: BaseException) -> None:
    assert not is_unreachable(error)


async def test_wait_gives_up_at_its_deadline() -> None:
    dead = create_client("mongodb://127.0.0.1:9", timeouts=FAST)
    outage = MongoOutage(lambda: ping(dead), wait_seconds=0.6, first_delay=0.05)
    started = time.monotonic()
    with pytest.raises(MongoUnavailableError, match=r"unreachable for 0\.6 s"):
        await outage.wait(outage.deadline())
    assert 0.6 <= time.monotonic() - started < 2.0
    assert outage.waiting == 0
    await dead.close()


async def test_call_repeats_an_operation_cut_by_an_outage(
        restartable_mongo: RestartableMongo, client: AsyncMongoClient[dict[str, Any]], mongo_db_name: str) -> None:
    outage = MongoOutage(lambda: ping(client), wait_seconds=20, first_delay=0.05, max_delay=0.2)
    collection = client[mongo_db_name]["things"]
    attempts = 0

    async def insert() -> None:
        nonlocal attempts
        attempts += 1
        await collection.insert_one({"_id": "one"})

    restartable_mongo.stop()
    restart = restartable_mongo.start_after(0.5)
    await outage.call(insert, "test insert")
    restart.result(timeout=60)
    assert attempts >= 2 and outage.waiting == 0
    assert await collection.find_one({"_id": "one"}) == {"_id": "one"}
    with pytest.raises(DuplicateKeyError):  # not an outage: at once, not repeated
        await outage.call(insert, "test insert")
