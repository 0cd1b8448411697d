"""A workspace's git metadata kept as it was before an agent ran: defence in depth.

The sandbox binds the git directory read-only (`sandbox_git.read_only_git`) and the service's own git
refuses or ignores whatever an agent could plant there (`safe_git`); but an agent may still run
unconfined (AGENT_SANDBOX=off, Aider without bubblewrap). So every file of the git metadata that
configures a program or redirects the repository is read before the agent starts and compared
after it ends: the configuration (`config`, `config.worktree`), redirects (`commondir`, `gitdir`,
`objects/info/alternates`), `info/attributes`, every hook, and `.git` itself (a directory, or a
worktree's `gitdir:` file). A changed file is put back (a new one removed) and the step fails,
saying what was changed; what cannot be put back (a `.git` directory replaced by a file) is
reported, and the service's git then refuses the repository.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from app.agents.sandbox_git import worktree_git_dirs

#: Files of a git directory that configure programs git runs or redirect the repository.
CONFIG_FILES = ("config", "config.worktree", "commondir", "gitdir", "objects/info/alternates", "info/attributes")
#: The folder of hooks: every file in it is watched, and a new one is removed.
HOOKS = "hooks"
#: What `_read` gives for a real directory (no file holds exactly this: it starts with a NUL).
DIRECTORY = b"\0directory"
#: What `_read` gives for a symlink, followed by its target.
LINK = b"\0link:"
#: What is kept of a hook: its digest (a record stays small; a changed hook is removed, not rebuilt).
DIGEST = b"\0sha256:"


def config_files(workspace: Path) -> list[Path]:
    """What is watched: `.git` itself, and in each git directory of the workspace's repository (its
    own `.git/`, or for a goal's worktree the main workspace's git directory and the worktree's
    folder in it) the files of `CONFIG_FILES` and its `hooks` folder with the hooks in it."""
    dot_git = Path(os.path.realpath(workspace)) / ".git"  # real: a link on the way later is the agent's
    directories = [dot_git] if dot_git.is_dir() and not dot_git.is_symlink() else worktree_git_dirs(dot_git.parent)
    if dot_git.is_file() and not dot_git.is_symlink() and directories:
        directories += [private for private in _worktree_dir(dot_git) if private.parent == directories[0] / "worktrees"]
    watched = [dot_git]
    for directory in directories:
        watched += [directory / name for name in CONFIG_FILES]
        hooks = directory / HOOKS
        watched.append(hooks)
        if hooks.is_dir() and not hooks.is_symlink():
            watched += sorted(hooks.iterdir())
    return watched


@dataclass
class GitConfigGuard:
    """The bytes of each watched file before the agent (None: it did not exist; `DIRECTORY`: a
    directory; `LINK` + target: a symlink; `DIGEST` + sha256: a hook)."""

    before: dict[Path, bytes | None] = field(default_factory=dict)

    @classmethod
    def record(cls, workspace: Path) -> GitConfigGuard:
        return cls({path: _read(path, digest=path.parent.name == HOOKS) for path in config_files(workspace)})

    def restore_changed(self) -> list[str]:
        """Put back every file that changed and remove new hooks; their names (empty when nothing changed)."""
        changed = []
        for path, content in self.before.items():
            if content == DIRECTORY and path.name == HOOKS:
                changed += self._remove_new_hooks(path)
            if _read(path, digest=content is not None and content.startswith(DIGEST)) == content:
                continue
            if content == DIRECTORY:  # a directory replaced (a `.git` the agent swapped for a file)
                changed.append(f"{_name(path)} (replaced; not put back)")
                continue
            try:
                _put_back(path, content)
            except OSError:  # its directory is gone or replaced: the service's git refuses such a repository
                changed.append(f"{_name(path)} (not put back)")
            else:
                changed.append(_name(path))
        return changed

    def _remove_new_hooks(self, hooks: Path) -> list[str]:
        if not hooks.is_dir() or os.path.realpath(hooks) != os.path.abspath(hooks):
            return []
        removed = []
        for path in sorted(hooks.iterdir()):
            if path not in self.before:
                _remove(path)
                removed.append(_name(path))
        return removed

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


def _put_back(path: Path, content: bytes | None) -> None:
    """Write the recorded content back, never through a symlink the agent put on the way."""
    _no_link_on_the_way(path.parent)
    if path.is_symlink() or path.is_dir():
        _remove(path)
    if content is None:
        path.unlink(missing_ok=True)
    elif content.startswith(LINK):
        os.symlink(os.fsdecode(content.removeprefix(LINK)), path)
    elif content.startswith(DIGEST):
        path.unlink(missing_ok=True)  # a hook changed: removed (the service's git never runs one anyway)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


def _no_link_on_the_way(folder: Path) -> None:
    if os.path.realpath(folder) != os.path.abspath(folder):
        raise OSError(f"{folder} leads through a symlink")


def _worktree_dir(dot_git: Path) -> list[Path]:
    """The folder a worktree's `gitdir:` file names (checked by the caller against the main one)."""
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace")[:4096].strip()
    except OSError:
        return []
    if not text.startswith("gitdir:"):
        return []
    return [Path(os.path.normpath(dot_git.parent / text.removeprefix("gitdir:").strip()))]


def _name(path: Path) -> str:
    """`.git/config`, `.git/hooks/pre-commit`, `worktrees/g1/commondir`: short, still unambiguous."""
    parts = path.parts
    if ".git" in parts:
        return "/".join(parts[len(parts) - 1 - parts[::-1].index(".git"):])
    return "/".join(parts[-2:])


def _read(path: Path, *, digest: bool = False) -> bytes | None:
    """A file's bytes (with `digest`: `DIGEST` + its sha256); `DIRECTORY` for a directory, `LINK` +
    its target for a symlink (never followed)."""
    try:
        if path.is_symlink():
            return LINK + os.fsencode(os.readlink(path))
        if path.is_dir():
            return DIRECTORY
        content = path.read_bytes()
        return DIGEST + hashlib.sha256(content).hexdigest().encode() if digest else content
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
