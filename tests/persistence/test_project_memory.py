"""ProjectMemory against a real nx-27017: a project's test command outlives the run that learnt it."""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from app.persistence.project_memory import COLLECTION_NAME, MAX_COMMAND_CHARS, ProjectMemory, project_key

Db = AsyncDatabase[dict[str, Any]]


async def test_a_remembered_command_is_read_back_and_the_newest_answer_wins(mongo_db: Db) -> None:
    memory = ProjectMemory(mongo_db[COLLECTION_NAME])
    key = project_key("client-1", "project-1", "clients/c1/ws")
    assert await memory.test_command(key) is None

    await memory.remember_test_command(key, "make check", thread_id="thread-1")
    await memory.remember_test_command(key, "python3 -m pytest -q tests", thread_id="thread-2")

    assert await memory.test_command(key) == "python3 -m pytest -q tests"
    assert await ProjectMemory(mongo_db[COLLECTION_NAME]).test_command(key) == "python3 -m pytest -q tests"
    stored = await mongo_db[COLLECTION_NAME].find_one({"_id": key})
    assert stored is not None and stored["test_command_thread"] == "thread-2"


async def test_projects_do_not_share_answers(mongo_db: Db) -> None:
    memory = ProjectMemory(mongo_db[COLLECTION_NAME])
    await memory.remember_test_command(project_key("c1", "p1", "ws"), "make test", thread_id="t")

    assert await memory.test_command(project_key("c1", "p2", "ws")) is None  # another project of the client
    assert await memory.test_command(project_key("c2", "p1", "ws")) is None  # another client's project p1
    assert await memory.test_command(project_key("c1", None, "ws")) is None  # keyed by workspace without a project


async def test_an_overlong_answer_is_kept_bounded(mongo_db: Db) -> None:
    memory = ProjectMemory(mongo_db[COLLECTION_NAME])
    key = project_key("c1", None, "clients/c1/ws")
    await memory.remember_test_command(key, "x" * 5000, thread_id="t")

    assert len(await memory.test_command(key) or "") == MAX_COMMAND_CHARS
