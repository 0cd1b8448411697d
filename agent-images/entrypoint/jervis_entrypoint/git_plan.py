"""`.jervis/git.json`, validated before git runs: a malformed plan is the orchestrator's bug (exit 2),
not a failed commit."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import JERVIS_DIR, BadEnvironment, read_json_object, string_list


@dataclass(frozen=True)
class PlannedCommit:
    """One commit of a series (`commits` in git.json): the work of one goal."""

    message: str
    trailer: str
    files: list[str]
    tree: str | None
    """A tree object holding the workspace as it was after the goal; None: the working tree now."""


@dataclass(frozen=True)
class GitPlan:
    """`.jervis/git.json`."""

    action: str
    branch: str
    message: str
    files: list[str]
    trailer: str
    remote: str
    commits: tuple[PlannedCommit, ...] = ()
    """A series of commits, one per goal; when given, message, trailer and files above are not used."""

    @property
    def changed_files(self) -> list[str]:
        """The files a commit step reports: its own, or those of all commits of the series."""
        if not self.commits:
            return self.files
        return list(dict.fromkeys(path for planned in self.commits for path in planned.files))


#: A full SHA-1 or SHA-256 object name.
OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def load_git_plan(workspace: Path) -> GitPlan:
    """Validate `.jervis/git.json`; a missing field is an orchestrator bug (exit 2)."""
    plan = read_json_object(workspace / JERVIS_DIR / "git.json", required=True)
    action = plan.get("action")
    if action not in ("commit", "push"):
        raise BadEnvironment("git.json: action must be 'commit' or 'push'")
    branch = plan.get("branch")
    if not isinstance(branch, str) or not branch.strip() or branch.startswith("-"):
        raise BadEnvironment("git.json: branch must be a branch name")
    remote = plan.get("remote") or "origin"
    if not isinstance(remote, str) or remote.startswith("-"):
        raise BadEnvironment("git.json: remote must be a remote name")
    commits = planned_commits(plan.get("commits")) if action == "commit" else ()
    message, trailer = plan.get("message") or "", plan.get("trailer") or ""
    if action == "commit" and not commits and not (isinstance(message, str) and message.strip()):
        raise BadEnvironment("git.json: a commit needs a message")
    if action == "commit" and not commits and not (isinstance(trailer, str) and trailer.strip()):
        raise BadEnvironment("git.json: a commit needs a trailer (it makes the commit idempotent)")
    return GitPlan(action, branch.strip(), str(message).strip(), string_list(plan.get("files")),
                   str(trailer).strip(), remote, commits)


def planned_commits(value: Any) -> tuple[PlannedCommit, ...]:
    """`commits` of git.json: absent, null or [] is no series; anything malformed is an orchestrator bug."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise BadEnvironment("git.json: commits must be a list of objects")
    commits: list[PlannedCommit] = []
    for number, item in enumerate(value):
        where = f"git.json: commits[{number}]"
        if not isinstance(item, dict):
            raise BadEnvironment(f"{where} must be an object")
        message, trailer, files, tree = (item.get(key) for key in ("message", "trailer", "files", "tree"))
        if not (isinstance(message, str) and message.strip()):
            raise BadEnvironment(f"{where} needs a message")
        if not (isinstance(trailer, str) and trailer.strip()) or len(trailer.strip().splitlines()) != 1:
            raise BadEnvironment(f"{where} needs a trailer of one line (it makes the commit idempotent)")
        if not isinstance(files, list) or not all(isinstance(path, str) and path for path in files):
            raise BadEnvironment(f"{where}: files must be a list of paths")
        if tree is not None and not (isinstance(tree, str) and OBJECT_ID.fullmatch(tree.lower())):
            raise BadEnvironment(f"{where}: tree must be null or a tree object id")
        commits.append(PlannedCommit(message.strip(), trailer.strip(), list(dict.fromkeys(files)),
                                     tree.lower() if tree is not None else None))
    trailers = [planned.trailer for planned in commits]
    if len(set(trailers)) != len(trailers):
        raise BadEnvironment("git.json: commits need a trailer each of their own")
    return tuple(commits)
