"""Snapshot records (app/agents/snapshot_files.py `read_key`) live in a git dir an agent could write:
a symlink standing where a record is read is not followed, and nothing of its target is quoted."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.snapshot_files import read_key
from app.agents.snapshot_git import SnapshotError

TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def test_a_record_is_read(tmp_path: Path) -> None:
    (tmp_path / "key").write_text(TREE + "\n")
    assert read_key(tmp_path / "key") == TREE
    assert read_key(tmp_path / "missing") is None


def test_a_record_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("password=hunter2\n")
    records = tmp_path / "records"
    records.mkdir()
    (records / "key").symlink_to(secret)
    with pytest.raises(SnapshotError, match="not read") as raised:
        read_key(records / "key")
    assert "hunter2" not in str(raised.value)
