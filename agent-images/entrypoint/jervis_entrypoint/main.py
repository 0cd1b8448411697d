"""The entrypoint's run: validate, do the step of the mode asked for, write the result, and exit 0
(success), 1 (a failed step) or 2 (the entrypoint itself cannot run)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Mapping

from .agent_mode import run_agent_mode
from .common import BadEnvironment, log
from .config import load_config, load_step, workspace_from
from .git import GitError
from .git_mode import run_git_mode
from .git_plan import load_git_plan
from .result import write_result
from .tests import load_test_plan, run_test_mode

EXIT_SUCCESS, EXIT_FAILURE, EXIT_BAD_ENVIRONMENT = 0, 1, 2


def bad_environment(env: Mapping[str, str], reason: str) -> int:
    """Exit 2 with the reason on stderr, and a failure result if there is a workspace to put it in."""
    print(f"jervis-entrypoint: {reason}", file=sys.stderr, flush=True)
    workspace = workspace_from(env)
    if workspace is not None:
        with contextlib.suppress(OSError):
            write_result(workspace, {"success": False, "summary": f"Entrypoint cannot run: {reason}",
                                     "changedFiles": [], "exitCode": None, "costUsd": None, "logTail": "",
                                     "agent": result_agent(env)})
    return EXIT_BAD_ENVIRONMENT


def result_agent(env: Mapping[str, str]) -> str:
    """The `agent` of a failure result: "test" in test mode, else the step's agent type."""
    if (env.get("JERVIS_MODE") or "").strip().lower() == "test":
        return "test"
    return (env.get("AGENT_TYPE") or "").strip()


def main(env: Mapping[str, str] | None = None) -> int:
    """Validate, run the step, write the result; 0 success, 1 failed step, 2 bad environment."""
    env = os.environ if env is None else env
    try:
        config = load_config(env)
        os.chdir(config.workspace)  # the agent, git and the tests all work in the workspace
        if config.mode == "git":
            result = run_git_mode(config, load_git_plan(config.workspace))
        elif config.mode == "test":
            result = run_test_mode(config, load_test_plan(config.workspace))
        else:
            result = run_agent_mode(config, load_step(config.workspace))
    except BadEnvironment as exc:
        return bad_environment(env, str(exc))
    except (GitError, OSError, subprocess.TimeoutExpired) as exc:  # the workspace itself is unusable
        return bad_environment(env, f"{type(exc).__name__}: {exc}")
    write_result(config.workspace, result)
    log(f"{'success' if result['success'] else 'failure'}: {result['summary'][:200]}")
    return EXIT_SUCCESS if result["success"] else EXIT_FAILURE
