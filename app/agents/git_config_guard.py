"""A workspace's git configuration kept as it was before a confined agent ran.

The sandbox lets an agent write its workspace, `.git/` included, but the service's own git (the
snapshots, the worktrees, the commit and push) runs outside the sandbox on the same repository.
A configuration the agent planted there would run its programs as the service: a filter's
`clean` command on `git add`, `gpg.program` on a signed commit, `core.sshCommand` on a push, a
`diff.*.textconv`. So the configuration files are read before the agent starts and compared
after it ends: a changed one is put back and the step fails, saying what was changed.
"""

from __future__ import annotations

import base64
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from app.agents.sandbox import worktree_git_dirs

#: Files of a git directory that configure programs git runs.
CONFIG_FILES = ("config", "config.worktree")


def config_files(workspace: Path) -> list[Path]:
    """The configuration files of the workspace's repository: its own `.git/`, or for a goal's
    worktree the main workspace's git directory (the one the sandbox binds)."""
    dot_git = workspace / ".git"
    directories = [dot_git] if dot_git.is_dir() and not dot_git.is_symlink() else worktree_git_dirs(workspace)
    return [directory / name for directory in directories for name in CONFIG_FILES]


@dataclass
class GitConfigGuard:
    """The bytes of each configuration file before the agent (None: the file did not exist)."""

    before: dict[Path, bytes | None] = field(default_factory=dict)

    @classmethod
    def record(cls, workspace: Path) -> GitConfigGuard:
        return cls({path: _read(path) for path in config_files(workspace)})

    def restore_changed(self) -> list[str]:
        """Put back every file that changed; their names (empty when nothing changed)."""
        changed = []
        for path, content in self.before.items():
            if _read(path) == content:
                continue
            changed.append(f"{path.parent.name}/{path.name}")
            if path.is_symlink() or path.is_dir():
                _remove(path)
            if content is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(content)
        return changed


    def to_json(self) -> str:
        """What was recorded, for the runner's private state: a service that re-attaches to the
        agent after a restart restores from it too (`from_json`)."""
        return json.dumps({str(path): None if content is None else base64.b64encode(content).decode("ascii")
                           for path, content in self.before.items()})

    @classmethod
    def from_json(cls, text: str) -> GitConfigGuard:
        """`to_json`'s text back; ValueError when it is not that."""
        data = json.loads(text)
        if not isinstance(data, dict) or not all(isinstance(v, str | None) for v in data.values()):
            raise ValueError("not a recorded git configuration")
        return cls({Path(path): None if content is None else base64.b64decode(content, validate=True)
                    for path, content in data.items()})


def _read(path: Path) -> bytes | None:
    try:
        return None if path.is_symlink() else path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
