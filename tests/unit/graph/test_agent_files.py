"""Reading back a file an agent could have written (app/graph/rules/agent_files.py): never through
a symlink, a refused file told apart from one that is only gone or too large."""

from __future__ import annotations

import os
from pathlib import Path

from app.graph.rules import agent_files


def test_a_regular_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/a.py").write_text("x = 1\n")
    assert agent_files.read(tmp_path, "pkg/a.py", max_bytes=100) == agent_files.AgentFile("x = 1\n")


def test_a_link_in_place_of_the_file_or_of_a_folder_on_its_way_is_refused_unread(tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "secret.py"
    secret.parent.mkdir()
    secret.write_text("TOKEN = 'sk-secret'\n")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").symlink_to(secret)
    (root / "pkg").symlink_to(secret.parent)

    for rel in ("a.py", "pkg/secret.py"):
        read = agent_files.read(root, rel, max_bytes=1000)
        assert read.text is None and read.refused and "sk-secret" not in read.refused


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    read = agent_files.read(tmp_path, "pipe.py", max_bytes=1000)
    assert read.text is None and read.refused is not None


def test_a_file_gone_or_only_too_large_is_not_read_and_not_refused(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("x" * 101)
    assert agent_files.read(tmp_path, "big.py", max_bytes=100) == agent_files.AgentFile(None)
    assert agent_files.read(tmp_path, "gone.py", max_bytes=100) == agent_files.AgentFile(None)
