"""Workspaces on the shared volume: path guard, hand-over files for the agent, cleanup (spec §11).

The repository's own files are never modified: agent-specific files (CLAUDE.md, `.claude/mcp.json`,
`.aider.conf.yml`) are written only where the repository has none, listed in a manifest, kept out
of git through `.git/info/exclude`, and removed after the step. A repository's own `AGENTS.md` /
`CLAUDE.md` is respected and pointed to instead.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.agents.control import should_detach

JERVIS_DIR = ".jervis"
RESULT_FILE = "result.json"
MANIFEST_FILE = "manifest.json"
#: Files agents create by themselves while they run (aider's history and caches).
AGENT_RUNTIME_FILES = (".aider.chat.history.md", ".aider.input.history", ".aider.tags.cache.v4")
REPO_GUIDES = ("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md")
KB_MCP_SERVER = "/opt/jervis/mcp/kb_server.py"


class WorkspaceError(ValueError):
    """A workspace path that escapes DATA_ROOT, or a workspace that cannot be prepared."""


class ResultFileError(RuntimeError):
    """The agent left no valid `.jervis/result.json`."""


class ResultFile(BaseModel):
    """`.jervis/result.json` as the entrypoint writes it (spec §10.4, agent-images/CONTRACT.md)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    success: bool
    summary: str = ""
    changed_files: list[str] = Field(default_factory=list, alias="changedFiles")
    exit_code: int | None = Field(default=None, alias="exitCode")
    cost_usd: float | None = Field(default=None, alias="costUsd")
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
    forbidden_files: list[str] = field(default_factory=list)
    title: str = ""
    kb_env: dict[str, str] = field(default_factory=dict)
    """CLIENT_ID, PROJECT_ID, KB_URL, KB_WRITE_URL for the KB MCP server."""
    git_plan: dict[str, Any] | None = None
    """`.jervis/git.json` for a git step (commit / push)."""
    test_plan: dict[str, Any] | None = None
    """`.jervis/test.json` for a test run (`require_tests`): the command and its deadline."""


class WorkspaceManager:
    def __init__(self, data_root: Path) -> None:
        self.root = data_root.resolve()

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
        return resolved

    def prepare(self, workspace: Path, brief: StepBrief) -> Path:
        """Write `.jervis/` and the agent's own files; a stale result of an earlier step goes."""
        workspace.mkdir(parents=True, exist_ok=True)
        jervis = workspace / JERVIS_DIR
        jervis.mkdir(exist_ok=True)
        (jervis / RESULT_FILE).unlink(missing_ok=True)
        created = self._agent_files(workspace, brief)
        existing_runtime = [name for name in AGENT_RUNTIME_FILES if (workspace / name).exists()]
        mcp = ".claude/mcp.json" if ".claude/mcp.json" in created else None
        task = {**brief.task, "files": brief.files, "agent_type": brief.agent_type, "mcp_config": mcp,
                "agent_files": created}
        _write_json(jervis / MANIFEST_FILE, {"created": created, "runtime_files_before": existing_runtime})
        (jervis / "instructions.md").write_text(brief.instructions, encoding="utf-8")
        _write_json(jervis / "task.json", task)
        (jervis / "kb-context.md").write_text(brief.kb_context or "_No KB context available._\n", encoding="utf-8")
        _write_json(jervis / "environment.json", brief.environment or {})
        (jervis / "environment.md").write_text(render_environment(brief.environment), encoding="utf-8")
        if brief.git_plan is not None:
            _write_json(jervis / "git.json", brief.git_plan)
        if brief.test_plan is not None:
            _write_json(jervis / "test.json", brief.test_plan)
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
            wanted[".aider.conf.yml"] = render_aider_conf(guides)
        created = []
        for rel, content in wanted.items():
            target = workspace / rel
            if target.exists():  # the repository's own file wins
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
            created.append(rel)
        return created

    def read_result(self, workspace: Path) -> ResultFile:
        path = workspace / JERVIS_DIR / RESULT_FILE
        try:
            return ResultFile.model_validate_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ResultFileError("agent wrote no .jervis/result.json") from exc
        except (ValidationError, ValueError) as exc:
            raise ResultFileError(f"invalid .jervis/result.json: {exc}") from exc

    def cleanup(self, workspace: Path) -> None:
        """Remove exactly what this step added for the agent; the agent's work stays. Nothing
        while the run is being suspended (`app.agents.control`): its agent may still be working
        from these files, for the pod that adopts the run."""
        if should_detach():
            return
        manifest_path = workspace / JERVIS_DIR / MANIFEST_FILE
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = {"created": [], "runtime_files_before": list(AGENT_RUNTIME_FILES)}
        for rel in manifest.get("created", []):
            (workspace / rel).unlink(missing_ok=True)
        for name in set(AGENT_RUNTIME_FILES) - set(manifest.get("runtime_files_before", [])):
            (workspace / name).unlink(missing_ok=True)
        claude_dir = workspace / ".claude"
        if claude_dir.is_dir() and not any(claude_dir.iterdir()):
            claude_dir.rmdir()
        shutil.rmtree(workspace / JERVIS_DIR, ignore_errors=True)

    @staticmethod
    def _exclude_from_git(workspace: Path, created: list[str]) -> None:
        """Keep agent files out of commits without touching the repository's own .gitignore.
        (A file the repository tracks is unaffected by exclude, and is never one we created.)"""
        info = workspace / ".git" / "info"
        if not info.is_dir():
            return
        exclude = info / "exclude"
        existing = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        names = [JERVIS_DIR, *AGENT_RUNTIME_FILES, *created]
        missing = [f"/{name}" for name in names if f"/{name}" not in existing.splitlines()]
        if missing:
            with exclude.open("a", encoding="utf-8") as handle:
                handle.write(("" if existing.endswith("\n") or not existing else "\n") + "\n".join(missing) + "\n")


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


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False), encoding="utf-8")


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


def render_aider_conf(guides: list[str]) -> str:
    """Aider reads the step's context files read-only; it never commits (the orchestrator does)."""
    read = [".jervis/kb-context.md", ".jervis/environment.md", *guides]
    lines = ["# Written by Jervis for one step; removed afterwards.", "auto-commits: false",
             "dirty-commits: false", "check-update: false", "analytics: false", "read:"]
    lines += [f"  - {path}" for path in read]
    return "\n".join(lines) + "\n"
