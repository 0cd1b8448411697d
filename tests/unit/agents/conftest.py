"""Fixtures of the agent-runner tests: a data root, a workspace manager on the test's directory and a git repo in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.workspace import WorkspaceManager
from tests.support import make_git_repo


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A DATA_ROOT inside the test's directory (tests that need something outside it use tmp_path)."""
    root = tmp_path / "data"
    root.mkdir()
    return root


@pytest.fixture
def manager(tmp_path: Path) -> WorkspaceManager:
    return WorkspaceManager(tmp_path)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_git_repo(tmp_path / "repo")
