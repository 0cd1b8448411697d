"""Workspaces on the shared volume: path guard, `.jervis/` files for the agent, cleanup (spec §11)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

JERVIS_DIR = ".jervis"
RESULT_FILE = "result.json"
#: Files an agent step may create that must never be committed.
AGENT_FILES = (JERVIS_DIR, ".claude", "CLAUDE.md.jervis", ".aider.conf.yml", ".aider.chat.history.md",
               ".aider.input.history", ".aider.tags.cache.v4")


class WorkspaceError(ValueError):
    """A workspace path that escapes DATA_ROOT, or a workspace that cannot be prepared."""


class ResultFileError(RuntimeError):
    """The agent left no valid `.jervis/result.json`."""


class ResultFile(BaseModel):
    """`.jervis/result.json` as agents write it (spec §10.4)."""

    success: bool
    summary: str = ""
    changed_files: list[str] = Field(default_factory=list, alias="changedFiles")


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

    def prepare(
        self,
        workspace: Path,
        *,
        instructions: str,
        task: dict[str, Any],
        kb_context: str,
        environment: dict[str, Any] | None,
    ) -> Path:
        """Write the `.jervis/` hand-over files; a stale result from an earlier step is removed."""
        workspace.mkdir(parents=True, exist_ok=True)
        jervis = workspace / JERVIS_DIR
        jervis.mkdir(exist_ok=True)
        (jervis / RESULT_FILE).unlink(missing_ok=True)
        (jervis / "instructions.md").write_text(instructions, encoding="utf-8")
        (jervis / "task.json").write_text(json.dumps(task, indent=2, ensure_ascii=False), encoding="utf-8")
        (jervis / "kb-context.md").write_text(kb_context or "_No KB context available._\n", encoding="utf-8")
        (jervis / "environment.json").write_text(
            json.dumps(environment or {}, indent=2, ensure_ascii=False), encoding="utf-8"
        )
        (jervis / "environment.md").write_text(render_environment(environment), encoding="utf-8")
        self._exclude_from_git(workspace)
        return jervis

    def read_result(self, workspace: Path) -> ResultFile:
        path = workspace / JERVIS_DIR / RESULT_FILE
        try:
            return ResultFile.model_validate_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ResultFileError("agent wrote no .jervis/result.json") from exc
        except (ValidationError, ValueError) as exc:
            raise ResultFileError(f"invalid .jervis/result.json: {exc}") from exc

    def cleanup(self, workspace: Path) -> None:
        """Remove the hand-over directory; the agent's work stays."""
        shutil.rmtree(workspace / JERVIS_DIR, ignore_errors=True)

    @staticmethod
    def _exclude_from_git(workspace: Path) -> None:
        """Keep agent files out of commits without touching the repository's own .gitignore."""
        info = workspace / ".git" / "info"
        if not info.is_dir():
            return
        exclude = info / "exclude"
        existing = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        missing = [f"/{name}" for name in AGENT_FILES if f"/{name}" not in existing.splitlines()]
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
