"""The environment and the hand-over files of an agent step, validated once at the start, so a bad
input is reported as such (exit 2) and the rest of the entrypoint never re-reads `os.environ`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .common import JERVIS_DIR, BadEnvironment, read_json_object, string_list

AGENT_TYPES = ("aider", "claude", "openhands", "junie", "command")


@dataclass(frozen=True)
class Config:
    """What the environment asks for, validated once so the rest never re-reads os.environ."""

    workspace: Path
    mode: str
    agent_type: str
    command: list[str] | None
    model: str
    extra_args: list[str]
    allow_git: bool


@dataclass(frozen=True)
class Step:
    """The agent step handed over by the orchestrator in `.jervis/`."""

    instructions: str
    files: list[str]
    agent_files: list[str]
    mcp_config: str | None
    read_files: list[str] = field(default_factory=list)
    """Files the agent should read but not change (the tests that cover the step)."""


def load_config(env: Mapping[str, str]) -> Config:
    """Validate the environment; a bad one is the orchestrator's bug and ends with exit 2."""
    workspace = workspace_from(env)
    if workspace is None:
        raise BadEnvironment("WORKSPACE_PATH must name an existing directory")
    mode = (env.get("JERVIS_MODE") or "agent").strip().lower()
    if mode not in ("agent", "git", "test"):
        raise BadEnvironment(f"JERVIS_MODE must be 'agent', 'git' or 'test', not {mode!r}")
    allow_git = (env.get("ALLOW_GIT") or "").strip().lower() == "true"
    if mode == "git" and not allow_git:
        raise BadEnvironment("git mode needs ALLOW_GIT=true")
    if mode == "test":  # the runner may still pass the step's agent settings: they do not apply
        return Config(workspace=workspace, mode=mode, agent_type="test", command=None, model="", extra_args=[],
                      allow_git=allow_git)
    agent_type = (env.get("AGENT_TYPE") or "").strip().lower()
    if mode == "agent" and agent_type not in AGENT_TYPES:
        raise BadEnvironment(f"AGENT_TYPE must be one of {', '.join(AGENT_TYPES)}, not {agent_type!r}")
    command = argv_from(env, "AGENT_COMMAND")
    if mode == "agent" and agent_type == "command" and not command:
        raise BadEnvironment("AGENT_TYPE=command needs AGENT_COMMAND (a JSON list of strings)")
    return Config(
        workspace=workspace, mode=mode, agent_type=agent_type or "git", command=command,
        model=(env.get("AGENT_MODEL") or "").strip(), extra_args=argv_from(env, "AGENT_EXTRA_ARGS") or [],
        allow_git=allow_git,
    )


def workspace_from(env: Mapping[str, str]) -> Path | None:
    """The workspace directory, or None; used before validation too, to place a failure result."""
    raw = (env.get("WORKSPACE_PATH") or "").strip()
    if not raw:
        return None
    path = Path(raw).resolve()
    return path if path.is_dir() else None


def argv_from(env: Mapping[str, str], name: str) -> list[str] | None:
    """A JSON list of strings from the environment (an argv, so no shell quoting rules apply)."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise BadEnvironment(f"{name} is not valid JSON: {exc}") from exc
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadEnvironment(f"{name} must be a JSON list of strings")
    return value


def load_step(workspace: Path) -> Step:
    """Read `.jervis/instructions.md` (required) and `.jervis/task.json` (optional)."""
    jervis = workspace / JERVIS_DIR
    try:
        instructions = (jervis / "instructions.md").read_text(encoding="utf-8")
    except OSError as exc:
        raise BadEnvironment(f"cannot read {JERVIS_DIR}/instructions.md: {exc}") from exc
    task = read_json_object(jervis / "task.json", required=False)
    mcp_config = task.get("mcp_config")
    return Step(
        instructions=instructions,
        files=string_list(task.get("files")),
        agent_files=string_list(task.get("agent_files")),
        mcp_config=mcp_config if isinstance(mcp_config, str) and mcp_config else None,
        read_files=string_list(task.get("read_files")),
    )
