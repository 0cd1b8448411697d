"""Workspaces on the shared volume: path guard, hand-over files for the agent, cleanup (spec §11).

The repository's own files are never modified: agent-specific files (CLAUDE.md, `.claude/mcp.json`,
`.aider.conf.yml`) are written only where the repository has none, listed in a manifest, kept out
of git through `.git/info/exclude`, and removed after the step. A repository's own `AGENTS.md` /
`CLAUDE.md` is respected and pointed to instead.

Every write and deletion here stays inside the workspace (`app/agents/confinement.py`), and an
agent never starts on a workspace whose symlinks lead out of it (`check_links`). What the agent
hands back (`result.json`) and what the cleanup reads (`manifest.json`) are untrusted input, read
without following a link (`confinement.read_inside`); a cleanup that cannot clean says so.
Nothing in `.jervis/` is the runner's state: the local runner keeps its own outside every
workspace (`local_process`), and a `.jervis/runs/` an agent made is removed with the rest.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.agents import confinement
from app.agents.control import should_detach
from app.agents.snapshots import SnapshotError, WorkspaceSnapshots

log = logging.getLogger(__name__)

JERVIS_DIR = ".jervis"
#: The service's own folder under DATA_ROOT (agent runs, tool caches, pod ids): never a workspace.
RESULT_FILE = "result.json"
MANIFEST_FILE = "manifest.json"
#: Files agents create by themselves while they run (aider's history and caches).
AGENT_RUNTIME_FILES = (".aider.chat.history.md", ".aider.input.history", ".aider.tags.cache.v4")
REPO_GUIDES = ("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md")
KB_MCP_SERVER = "/opt/jervis/mcp/kb_server.py"
#: `result.json` and `manifest.json` are a few kilobytes; a larger one is refused, not read.
MAX_RESULT_BYTES = 1024 * 1024
#: Paths named in the error of a cleanup that failed; the rest are counted.
NAMED_PROBLEMS = 5


class WorkspaceError(ValueError):
    """A workspace path that escapes DATA_ROOT, or a workspace that cannot be prepared."""


class WorkspaceMissingError(WorkspaceError):
    """The workspace directory is not there (a wrong DATA_ROOT or path, or removed since): the
    service never creates one in its place, so no agent works on an empty directory."""


class ResultFileError(RuntimeError):
    """The agent left no valid `.jervis/result.json`."""


class UnsafeWorkspaceError(confinement.WorkspaceEscapeError):
    """The workspace has symlinks that would carry an agent's writes out of it: no agent starts."""


class ResultFile(BaseModel):
    """`.jervis/result.json` as the entrypoint writes it (spec §10.4, agent-images/CONTRACT.md)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    success: bool
    summary: str = ""
    changed_files: list[str] = Field(default_factory=list, alias="changedFiles")
    exit_code: int | None = Field(default=None, alias="exitCode")
    cost_usd: float | None = Field(default=None, alias="costUsd")
    tokens: dict[str, int] | None = None
    """`{"sent", "received"}`: the tokens the agent reported using (Aider prints them), if any."""
    commit_sha: str | None = Field(default=None, alias="commitSha")
    log_tail: str = Field(default="", alias="logTail")
    test_outcome: str | None = Field(default=None, alias="testOutcome")
    """Test mode: passed | failed | not_run (the test command itself is unavailable)."""


@dataclass(frozen=True)
class StepBrief:
    """What an agent step gets besides its instructions."""

    agent_type: str
    instructions: str
    task: dict[str, Any]
    kb_context: str = ""
    environment: dict[str, Any] | None = None
    files: list[str] = field(default_factory=list)
    read_files: list[str] = field(default_factory=list)
    """Files the agent reads but does not change: the tests covering the step (`task.json`)."""
    forbidden_files: list[str] = field(default_factory=list)
    title: str = ""
    kb_env: dict[str, str] = field(default_factory=dict)
    """CLIENT_ID, PROJECT_ID, KB_URL, KB_WRITE_URL for the KB MCP server."""
    git_plan: dict[str, Any] | None = None
    """`.jervis/git.json` for a git step (commit / push)."""
    test_plan: dict[str, Any] | None = None
    """`.jervis/test.json` for a test run (`require_tests`): the command and its deadline."""


class WorkspaceManager:
    def __init__(self, data_root: Path, snapshots: WorkspaceSnapshots | None = None) -> None:
        self.root = data_root.resolve()
        self._git = snapshots or WorkspaceSnapshots()

    def resolve(self, workspace_path: str) -> Path:
        """Absolute workspace path; rejects `..`, absolute paths and symlinks leading outside."""
        if not workspace_path or Path(workspace_path).is_absolute() or "\x00" in workspace_path:
            raise WorkspaceError("workspace_path must be a relative path under DATA_ROOT")
        if ".." in Path(workspace_path).parts:
            raise WorkspaceError("workspace_path must not contain '..'")
        resolved = (self.root / workspace_path).resolve()
        if resolved == self.root:
            raise WorkspaceError("workspace_path must name a directory below DATA_ROOT, not DATA_ROOT itself")
        if not resolved.is_relative_to(self.root):
            raise WorkspaceError("workspace_path escapes DATA_ROOT (symlink?)")
        service = confinement.SERVICE_DIR
        if resolved.relative_to(self.root).parts[0] == service.name:  # an agent there would write the runner's state
            raise WorkspaceError(f"workspace_path must not lead into the service's own {service}/ under DATA_ROOT")
        return resolved

    def require(self, workspace: Path) -> Path:
        """`workspace` when it is a directory; else WorkspaceMissingError naming it and DATA_ROOT.
        Nothing is created: an agent started on an empty directory would write a project from
        nothing, and git would have nothing to commit to."""
        try:
            if workspace.is_dir():
                return workspace
            state = "is not a directory" if os.path.lexists(workspace) else "does not exist"
        except OSError as exc:  # a name too long to look up, a permission
            state = f"cannot be opened ({exc.strerror})"
        shown = workspace.relative_to(self.root) if workspace.is_relative_to(self.root) else workspace
        raise WorkspaceMissingError(f"the workspace {shown} {state} under DATA_ROOT ({self.root}); "
                                    "nothing was created in its place")

    def existing(self, workspace_path: str) -> Path:
        """`resolve` for a workspace that must be there (WorkspaceMissingError otherwise)."""
        return self.require(self.resolve(workspace_path))

    async def check_links(self, workspace: Path) -> None:
        """Refuse a workspace with a symlink whose target resolves outside it (UnsafeWorkspaceError):
        an agent writing through it would write outside the workspace, into another client's
        workspace or the host. Called before every agent, test or git run starts. One kind is let
        through: a link to a file outside DATA_ROOT that the repository ignores, such as a
        virtualenv's `.venv/bin/python -> /usr/bin/python3` (not the project's content, and no
        directory below which an agent could create files)."""
        if not workspace.is_dir():
            return
        links = await asyncio.to_thread(confinement.escaping_links, workspace)
        tolerable = [link for link in links if not link.is_dir and not link.target.is_relative_to(self.root)]
        ignored = await self._ignored(workspace, [link.path for link in tolerable]) if tolerable else set()
        refused = [link for link in links if link.path not in ignored]
        if refused:
            raise UnsafeWorkspaceError(
                f"the workspace has {len(refused)} symlink(s) leading outside it ({confinement.describe(refused)}); "
                f"no agent runs on it until they are removed or point inside the workspace")

    async def _ignored(self, workspace: Path, paths: list[str]) -> set[str]:
        try:
            return await self._git.ignored(workspace, paths)
        except SnapshotError as exc:  # not a repository, or git failed: nothing counts as ignored
            log.info("no ignore rules for the symlink check of %s: %s", workspace, exc)
            return set()

    def prepare(self, workspace: Path, brief: StepBrief) -> Path:
        """Write `.jervis/` and the agent's own files; a stale result of an earlier step goes.
        Nothing is written through a symlink that leaves the workspace (WorkspaceEscapeError), and
        a workspace that is not there is not created (WorkspaceMissingError)."""
        self.require(workspace)
        jervis = confinement.own_dir(workspace, JERVIS_DIR)
        (jervis / RESULT_FILE).unlink(missing_ok=True)  # in our own real directory: a link goes, not its target
        created = self._agent_files(workspace, brief)
        existing_runtime = [name for name in AGENT_RUNTIME_FILES if os.path.lexists(workspace / name)]
        mcp = ".claude/mcp.json" if ".claude/mcp.json" in created else None
        task = {**brief.task, "files": brief.files, "read_files": brief.read_files, "agent_type": brief.agent_type,
                "mcp_config": mcp, "agent_files": created}
        handover = {
            MANIFEST_FILE: _json({"created": created, "runtime_files_before": existing_runtime}),
            "instructions.md": brief.instructions,
            "task.json": _json(task),
            "kb-context.md": brief.kb_context or "_No KB context available._\n",
            "environment.json": _json(brief.environment or {}),
            "environment.md": render_environment(brief.environment),
        }
        if brief.git_plan is not None:
            handover["git.json"] = _json(brief.git_plan)
        if brief.test_plan is not None:
            handover["test.json"] = _json(brief.test_plan)
        for name, text in handover.items():
            confinement.write_text(workspace, f"{JERVIS_DIR}/{name}", text)
        self._exclude_from_git(workspace, created)
        return jervis

    def _agent_files(self, workspace: Path, brief: StepBrief) -> list[str]:
        """Create the agent-specific files the repository does not have; return their paths."""
        wanted: dict[str, str] = {}
        guides = [g for g in REPO_GUIDES if (workspace / g).is_file()]
        if brief.agent_type in ("claude", "junie"):
            wanted["CLAUDE.md"] = render_claude_md(brief, guides)
            wanted[".claude/mcp.json"] = json.dumps(mcp_config(brief.kb_env), indent=2)
        if brief.agent_type == "aider":
            wanted[".aider.conf.yml"] = render_aider_conf(guides, kb_context=bool(brief.kb_context.strip()),
                                                          environment=describes_environment(brief.environment))
        created = []
        for rel, content in wanted.items():
            if os.path.lexists(workspace / rel):  # the repository's own file (or link) wins
                continue
            confinement.write_text(workspace, rel, content)
            created.append(rel)
        return created

    def read_result(self, workspace: Path) -> ResultFile:
        """`.jervis/result.json`, untrusted input: read without following a link anywhere on the way,
        a regular file of at most `MAX_RESULT_BYTES` (a FIFO there cannot block the service),
        validated by `ResultFile`; ResultFileError otherwise."""
        try:
            data = confinement.read_inside(workspace, f"{JERVIS_DIR}/{RESULT_FILE}", max_bytes=MAX_RESULT_BYTES)
        except FileNotFoundError as exc:
            raise ResultFileError("agent wrote no .jervis/result.json") from exc
        except confinement.UnsafeReadError as exc:
            raise ResultFileError(f"{JERVIS_DIR}/{RESULT_FILE} not read: {exc}") from exc
        except OSError as exc:
            raise ResultFileError(f"{JERVIS_DIR}/{RESULT_FILE} unreadable: {exc}") from exc
        try:
            return ResultFile.model_validate_json(data)
        except (ValidationError, ValueError) as exc:
            raise ResultFileError(f"invalid .jervis/result.json: {exc}") from exc

    def cleanup(self, workspace: Path) -> str | None:
        """Remove exactly what this step added for the agent, and `.jervis/` whole (whatever the
        agent put there: nothing in it is the runner's state); the agent's work stays. Nothing while
        the run is being suspended (`app.agents.control`): its agent may still be working from these
        files, for the pod that adopts the run. Nothing is deleted or truncated through a symlink.
        Returns None when clean, else what could not be removed (also logged as an error): the
        caller fails the step with it (`outcome.uncleaned`), since the next step would meet the
        agent's files where the service's belong."""
        if should_detach():
            return None
        manifest = _manifest(workspace)
        problems: list[str] = []
        for rel in [*manifest.created, *(set(AGENT_RUNTIME_FILES) - set(manifest.runtime_files_before))]:
            try:
                confinement.remove_file(workspace, rel)
            except OSError as exc:
                problems.append(f"{rel} ({exc.strerror or exc})")
        confinement.remove_empty_dir(workspace, ".claude")
        problems += _remove_jervis(workspace)
        if not problems:
            return None
        problem = (f"The workspace could not be cleaned after the step: {', '.join(problems[:NAMED_PROBLEMS])}"
                   f"{f' and {len(problems) - NAMED_PROBLEMS} more' if len(problems) > NAMED_PROBLEMS else ''}. "
                   f"Files the agent left there (made read-only or undeletable?) must be removed before the "
                   f"next step runs on {workspace}")
        log.error("%s", problem)
        return problem

    def exclude_agent_files(self, workspace: Path) -> None:
        """Keep the agents' files out of every snapshot of this repository and its linked worktrees
        (they share its `info/exclude`), before any step has written them."""
        self._exclude_from_git(workspace, [])

    @staticmethod
    def _exclude_from_git(workspace: Path, created: list[str]) -> None:
        """Keep agent files out of commits without touching the repository's own .gitignore.
        (A file the repository tracks is unaffected by exclude, and is never one we created.)"""
        info = workspace / ".git" / "info"
        exclude = info / "exclude"
        if not info.is_dir() or not confinement.inside(workspace, info) or exclude.is_symlink():
            return  # no repository here, or one whose git dir leads elsewhere: not ours to write
        existing = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        names = [JERVIS_DIR, *AGENT_RUNTIME_FILES, *created]
        missing = [f"/{name}" for name in names if f"/{name}" not in existing.splitlines()]
        if missing:
            separator = "" if existing.endswith("\n") or not existing else "\n"
            confinement.write_text(workspace, ".git/info/exclude", existing + separator + "\n".join(missing) + "\n")


class _Manifest(BaseModel):
    """`.jervis/manifest.json` as `prepare` writes it; the agent could have rewritten it, so it
    only ever names files inside the workspace to remove (`confinement.remove_file`)."""

    created: list[str] = Field(default_factory=list)
    runtime_files_before: list[str] = Field(default_factory=lambda: list(AGENT_RUNTIME_FILES))


def _manifest(workspace: Path) -> _Manifest:
    try:
        return _Manifest.model_validate_json(
            confinement.read_inside(workspace, f"{JERVIS_DIR}/{MANIFEST_FILE}", max_bytes=MAX_RESULT_BYTES))
    except (OSError, ValidationError, ValueError):  # none, a link, or not ours: remove only the usual files
        return _Manifest()


def _remove_jervis(workspace: Path) -> list[str]:
    """`.jervis/` gone, each failure named: a symlink there goes itself (its target untouched), and
    `shutil.rmtree` follows no symlink below it."""
    target = workspace / JERVIS_DIR
    problems: list[str] = []

    def failed(_function: object, path: str, error: tuple[type[BaseException], BaseException, object]) -> None:
        exc = error[1]
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        problems.append(f"{os.path.relpath(path, workspace)} ({detail})")

    try:
        if target.is_symlink() or (os.path.lexists(target) and not target.is_dir()):
            target.unlink()
        elif target.is_dir() and confinement.inside(workspace, target.parent):
            shutil.rmtree(target, onerror=failed)
    except OSError as exc:
        problems.append(f"{JERVIS_DIR} ({exc.strerror or exc})")
    if os.path.lexists(target) and not problems:
        problems.append(f"{JERVIS_DIR} (still there)")
    return problems


def describes_environment(environment: dict[str, Any] | None) -> bool:
    """Whether the environment says anything an agent can use (a namespace, components, agent
    instructions): a request's `testCommand` alone is the orchestrator's, and the instructions
    already name it."""
    return environment is not None and any(environment.get(key)
                                           for key in ("namespace", "components", "agentInstructions"))


def render_environment(environment: dict[str, Any] | None) -> str:
    """Markdown view of Kotlin's environment object (components, hosts, ports)."""
    if not environment:
        return "_No environment defined._\n"
    lines = ["# Environment", f"Namespace: {environment.get('namespace') or '-'}", ""]
    for component in environment.get("components") or []:
        if not isinstance(component, dict):
            continue
        ports = ", ".join(
            str(p.get("service") or p.get("container")) for p in component.get("ports") or [] if isinstance(p, dict)
        )
        lines.append(
            f"- **{component.get('name', '?')}** ({component.get('type', '?')}): "
            f"host `{component.get('host') or '-'}`, ports {ports or '-'}, image `{component.get('image') or '-'}`"
        )
    if environment.get("agentInstructions"):
        lines += ["", "## Instructions", str(environment["agentInstructions"])]
    return "\n".join(lines) + "\n"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def mcp_config(kb_env: dict[str, str]) -> dict[str, Any]:
    """Claude Code's MCP config: the KB MCP server shipped in the agent images (stdio)."""
    return {"mcpServers": {"jervis-kb": {"command": "python3", "args": [KB_MCP_SERVER], "env": dict(kb_env)}}}


def render_claude_md(brief: StepBrief, guides: list[str]) -> str:
    git = brief.git_plan is not None
    lines = [f"# Jervis agent — {brief.title or brief.task.get('query', '')[:80]}", ""]
    lines += ["Your step is in `.jervis/instructions.md`; KB context in `.jervis/kb-context.md`; "
              "the environment in `.jervis/environment.md`.", "", "## Rules"]
    if git:
        lines += ["- Allowed: `git add`, `git commit`, `git push`, `git checkout -b`, `git branch`.",
                  "- Forbidden: `git push --force`, `git reset --hard`, `git rebase`.",
                  "- Stage only the files listed in `.jervis/git.json`."]
    else:
        lines += ["- Never run git commands that change history or the index (commit, push, checkout, "
                  "reset, rebase, stash): the orchestrator commits after the user approves."]
    if brief.forbidden_files:
        lines.append(f"- Never modify files matching: {', '.join(brief.forbidden_files)}.")
    if guides:
        lines.append(f"- Follow the repository's own guides: {', '.join(guides)}.")
    lines += ["- When done, write `.jervis/result.json`: "
              '`{"success": bool, "summary": str, "changedFiles": [str]}`.', "",
              "## Knowledge Base (MCP server `jervis-kb`)",
              "- `kb_search(query)`, `kb_search_simple(query)`, `kb_graph_search(query, node_type)`, "
              "`kb_store(content, kind)`"]
    return "\n".join(lines) + "\n"


def render_aider_conf(guides: list[str], *, kb_context: bool = True, environment: bool = True) -> str:
    """Aider reads the step's context files read-only (those that say something: an empty one is
    prompt tokens for nothing on a small model); it never commits (the orchestrator does)."""
    read = [*([".jervis/kb-context.md"] if kb_context else []), *([".jervis/environment.md"] if environment else []),
            *guides]
    lines = ["# Written by Jervis for one step; removed afterwards.", "auto-commits: false",
             "dirty-commits: false", "check-update: false", "analytics: false", "read:"]
    lines += [f"  - {path}" for path in read]
    return "\n".join(lines) + "\n"
