"""EmbeddedMongo: a real nx-27017 child process."""

from __future__ import annotations

from pathlib import Path

import pytest
from pymongo import MongoClient
from pymongo.errors import PyMongoError

from app.dev.embedded_mongo import EmbeddedMongo, EmbeddedMongoError
from app.persistence.mongo import MongoTimeouts, create_client, ping
from tests.support import free_port, pid_alive


def _server_pid(url: str) -> int:
    with MongoClient(url, serverSelectionTimeoutMS=2000) as client:
        return int(client.admin.command("serverStatus")["pid"])



def test_start_serves_loopback_url_and_stop_is_idempotent(tmp_path: Path) -> None:
    server = EmbeddedMongo(work_dir=tmp_path)
    with server:
        assert server.url.startswith("mongodb://127.0.0.1:")
        pid = server.pid
        assert pid is not None and _server_pid(server.url) == pid
        assert (tmp_path / "nx-27017.log").exists() and (tmp_path / "nx-27017.pid").exists()
    assert not pid_alive(pid)
    server.stop()  # second stop: no error
    with pytest.raises(EmbeddedMongoError):
        _ = server.url


def test_data_dir_persists_across_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with EmbeddedMongo(data_dir=data_dir, work_dir=tmp_path / "run1") as first, MongoClient(first.url) as client:
        client["keep"]["docs"].insert_one({"_id": "a", "value": 42})
    with EmbeddedMongo(data_dir=data_dir, work_dir=tmp_path / "run2") as second, MongoClient(second.url) as client:
        assert client["keep"]["docs"].find_one({"_id": "a"}) == {"_id": "a", "value": 42}


def test_missing_executable_raises_clear_error(tmp_path: Path) -> None:
    server = EmbeddedMongo(work_dir=tmp_path, executable=tmp_path / "no-such-nx")
    with pytest.raises(EmbeddedMongoError, match=r"executable not found.*no-such-nx"):
        server.start()


def test_server_dying_at_start_reports_its_output(tmp_path: Path) -> None:
    fake = tmp_path / "fake-nx"
    fake.write_text("#!/bin/sh\necho 'fatal: cannot open database' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(EmbeddedMongoError, match=r"(?s)exited during start-up.*cannot open database"):
        EmbeddedMongo(work_dir=tmp_path, executable=fake).start(timeout=10)


def test_start_retries_when_the_chosen_port_is_taken(tmp_path: Path, mongo_server: EmbeddedMongo) -> None:
    taken_port = int(mongo_server.url.rsplit(":", 1)[1])
    ports = iter([taken_port])
    with EmbeddedMongo(work_dir=tmp_path, pick_port=lambda: next(ports, None) or free_port()) as server:
        assert server.url != mongo_server.url
        assert _server_pid(server.url) == server.pid
    assert _server_pid(mongo_server.url) == mongo_server.pid  # the shared server was left alone


async def test_ping_measures_latency_and_raises_when_unreachable(mongo_server: EmbeddedMongo) -> None:
    client = create_client(mongo_server.url)
    try:
        assert 0 < await ping(client) < 5
    finally:
        await client.close()
    dead = create_client("mongodb://127.0.0.1:9", timeouts=MongoTimeouts(connect_seconds=0.2))
    try:
        with pytest.raises(PyMongoError):
            await ping(dead)
    finally:
        await dead.close()
