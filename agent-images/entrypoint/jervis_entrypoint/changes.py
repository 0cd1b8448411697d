"""What an agent step changed, as git sees it (never the agent's claim): snapshots of the dirty
paths before and after, compared by status and content."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

from .common import JERVIS_DIR
from .git import GitError, git

#: Files agents create by themselves in the workspace root (never the step's work).
AGENT_BYPRODUCTS = (".aider.chat.history.md", ".aider.input.history", ".aider.tags.cache.v4")


def git_snapshot(workspace: Path) -> dict[str, str]:
    """Dirty paths -> status code and content digest, so a file dirty before the step but changed
    again by it is still seen, and an untracked or deleted file counts like any other change."""
    done = git(workspace, "status", "--porcelain=v1", "-z", "--untracked-files=all", read_only=True)
    if done.returncode != 0:
        raise GitError(f"git status: {done.stderr.strip()}")
    state: dict[str, str] = {}
    entries = iter(done.stdout.split("\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        state[path] = f"{code}:{digest(workspace / path)}"
        if code[0] in "RC":  # the next entry is the source of a rename or copy
            source = next(entries, "")
            if code[0] == "R" and source:
                state[source] = "R:moved-away"
    return state


def digest(path: Path) -> str:
    """Content fingerprint of a working-tree path (a deleted path has none)."""
    if path.is_symlink():
        return "link:" + os.readlink(path)
    if path.is_file():
        sha = hashlib.sha1()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
        return sha.hexdigest()
    return "dir" if path.is_dir() else "deleted"


def changed_between(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Paths whose status or content differs between two snapshots."""
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))


def is_reportable(path: str, agent_files: list[str]) -> bool:
    """Changed files never include our hand-over directory, the orchestrator's agent files or the
    agents' own housekeeping files (a listed directory excludes everything below it)."""
    clean = path.strip("/")
    excluded = [JERVIS_DIR, *AGENT_BYPRODUCTS, *(f.strip("/") for f in agent_files)]
    return not any(clean == name or clean.startswith(name + "/") for name in excluded if name)
