"""Agent mode: snapshot, run the agent, judge it, and report what git says it changed."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .agents.invocation import agent_argv, agent_env
from .changes import changed_between, git_snapshot, is_reportable
from .common import SUMMARY_LIMIT, log
from .config import Config, Step
from .git import GitError, is_git_repo
from .judge import judge
from .process import run_agent
from .result import drop_stale_result, read_own_result


def run_agent_mode(config: Config, step: Step) -> dict[str, Any]:
    """Snapshot, run the agent, and describe what it did (changed files from git, not its claim)."""
    workspace = config.workspace
    drop_stale_result(workspace)  # a stale result is not this step's
    in_git = is_git_repo(workspace)
    before = git_snapshot(workspace) if in_git else {}
    run = run_agent(agent_argv(config, step, in_git), workspace, agent_env(config, os.environ))
    # AGENT_COMMAND replaces the agent, so its output is not the agent's: it is judged as a command
    # (its own result.json decides), whatever type it stands in for.
    verdict = judge("command" if config.command else config.agent_type, run, read_own_result(workspace))
    changed = changed_files(workspace, before, verdict.claimed_files) if in_git else verdict.claimed_files
    return {
        "success": verdict.success,
        "summary": verdict.summary[:SUMMARY_LIMIT],
        "changedFiles": [path for path in changed if is_reportable(path, step.agent_files)],
        "exitCode": run.exit_code,
        "costUsd": verdict.cost_usd,
        "logTail": "\n".join(run.tail),
        "agent": config.agent_type,
        **({"tokens": {"sent": run.tokens[0], "received": run.tokens[1]}} if run.tokens else {}),
    }


def changed_files(workspace: Path, before: Mapping[str, str], claimed: list[str]) -> list[str]:
    """What git shows changed since the snapshot; if git fails after the agent ran, the agent's
    claim (logged as such) rather than losing the whole result."""
    try:
        return changed_between(before, git_snapshot(workspace))
    except (GitError, OSError, subprocess.TimeoutExpired) as exc:
        log(f"git status failed after the agent ran ({exc}); reporting the agent's own list")
        return claimed
