"""Test mode: run the project's tests after a coding step, and say whether they passed, failed, or
could not run at all (a missing test tool is not the agent's fault)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import JERVIS_DIR, SUMMARY_LIMIT, BadEnvironment, log, read_json_object
from .config import Config
from .process import AgentRun, pump
from .pytest_install import PYTEST_SPEC, install_pytest, probe_python, tools_dir
from .result import drop_stale_result
from .signals import Forwarder, stop_group

TEST_FILE = "test.json"
TEST_TAIL_LINES = 80
TEST_TAIL_CHARS = 8000
#: The shell's "cannot execute" and "command not found".
NOT_RUN_EXIT_CODES = (126, 127)
#: Output of a test tool that is not there (`python -m pytest` without pytest, make without the target);
#: any other message (an import error of the project's own code) is a test failure.
NOT_RUN_OUTPUT = re.compile(r"No module named '?pytest'?\s*$|make: \*\*\* No rule to make target [`']test'")


@dataclass(frozen=True)
class PlannedTests:
    """`.jervis/test.json`: the command that runs the project's tests, and how long it may take."""

    argv: list[str]
    label: str
    timeout: float | None


def load_test_plan(workspace: Path) -> PlannedTests:
    """Validate `.jervis/test.json`; a missing or malformed one is an orchestrator bug (exit 2).
    A string is a shell command line, a list an argv (no quoting rules)."""
    plan = read_json_object(workspace / JERVIS_DIR / TEST_FILE, required=True)
    command = plan.get("command")
    if isinstance(command, str) and command.strip():
        argv, label = ["sh", "-c", command], " ".join(command.split())
    elif isinstance(command, list) and command and all(isinstance(arg, str) for arg in command) and command[0]:
        argv, label = list(command), shlex.join(command)
    else:
        raise BadEnvironment("test.json: command must be a non-empty string or a non-empty list of strings")
    timeout = plan.get("timeout_seconds")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout < float("inf")):
        raise BadEnvironment("test.json: timeout_seconds must be a positive number")
    return PlannedTests(argv, label[:200], None if timeout is None else float(timeout))


def run_test_mode(config: Config, plan: PlannedTests) -> dict[str, Any]:
    """Run the tests and say whether they passed, failed, or could not run at all."""
    workspace = config.workspace
    drop_stale_result(workspace)  # a stale result is not this run's
    env = testing_env(os.environ)
    missing = provide_pytest(plan.argv, workspace, env)
    run = missing or run_tests(plan.argv, workspace, env, plan.timeout)
    outcome, summary = judge_tests(run, plan)
    return {
        "success": outcome == "passed",
        "summary": summary[:SUMMARY_LIMIT],
        "changedFiles": [],
        "exitCode": run.exit_code,
        "costUsd": None,
        "logTail": bounded_tail(run.tail),
        "agent": "test",
        "testOutcome": outcome,
    }


def testing_env(base: Mapping[str, str]) -> dict[str, str]:
    """Everything passed through, plus `CI=true` (overridable): test runners then neither watch for
    changes nor wait for a terminal (Jest's watch mode would never end). Python writes no byte
    code: a `.pyc` of a module the next attempt rewrites within the same second at the same size
    would be taken for current (its check is mtime and size), and the tests would judge old code."""
    return {"CI": "true", "PYTHONDONTWRITEBYTECODE": "1", **base}


def provide_pytest(argv: list[str], workspace: Path, env: dict[str, str]) -> AgentRun | None:
    """For `<python> -m pytest …` with a Python that cannot import pytest, install pytest for the run —
    never into the project or its virtualenv: into a cache directory outside the workspace (one per
    Python version, reused, installs serialised by a file lock), put first on `PYTHONPATH` in `env`.
    Returns a not-run AgentRun when pytest is missing and cannot be installed (offline), else None."""
    if len(argv) < 3 or argv[1:3] != ["-m", "pytest"]:
        return None
    python = argv[0]
    probe = probe_python(python, workspace, env)
    if probe is None:
        return None  # the interpreter cannot even start: run_tests says so
    version, has_pytest = probe
    if has_pytest:
        return None
    spec = (env.get("JERVIS_PYTEST_SPEC") or "").strip() or PYTEST_SPEC
    target = tools_dir(env, workspace) / f"pytest-py{version}"
    try:
        installed, output = install_pytest(python, version, spec, target, env)
    except OSError as exc:
        installed, output = False, [f"{type(exc).__name__}: {exc}"]
    if not installed:
        reason = next((line for line in reversed(output) if line.strip()), "no output")
        log(f"pytest is not installed for {python} and installing {spec} failed: {reason}")
        return AgentRun(exit_code=None, tail=output[-TEST_TAIL_LINES:],
                        start_error=f"pytest is not installed for {python} and installing it failed: {reason}")
    env["PYTHONPATH"] = os.pathsep.join(part for part in (str(target), env.get("PYTHONPATH", "")) if part)
    return None


def run_tests(argv: list[str], workspace: Path, env: Mapping[str, str], timeout: float | None) -> AgentRun:
    """Run the test command in its own process group, streaming its output like an agent's. After a
    timeout the whole group is stopped, and after a normal end whatever it left running (a server
    holding the output open would otherwise keep the entrypoint waiting)."""
    log(f"running tests: {argv[0]} ({len(argv) - 1} argument(s))")
    forwarder = Forwarder(group=True)
    previous = {sig: signal.signal(sig, forwarder) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            process = subprocess.Popen(
                argv, cwd=workspace, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1, start_new_session=True,
            )
        except OSError as exc:
            return AgentRun(exit_code=None, tail=[], start_error=f"{type(exc).__name__}: {exc}")
        forwarder.process = process
        tail: list[str] = []
        reader = threading.Thread(target=lambda: tail.extend(pump(process, TEST_TAIL_LINES)[0]),
                                  name="test-output", daemon=True)
        reader.start()
        timed_out = not finished_in_time(process, timeout)
        if timed_out:
            log(f"tests timed out after {timeout:g} s; stopping them")
        stop_group(process, reader)
        reader.join()
        exit_code = process.wait()
    finally:
        forwarder.cancel()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return AgentRun(exit_code=exit_code, tail=tail, signalled=forwarder.received, timed_out=timed_out)


def finished_in_time(process: subprocess.Popen[str], timeout: float | None) -> bool:
    """Wait for the command; False when it is still running after `timeout` seconds."""
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def judge_tests(run: AgentRun, plan: PlannedTests) -> tuple[str, str]:
    """`passed`, `failed` or `not_run`, with the summary. Only a test tool that is not there is
    `not_run` (the agent's code cannot be blamed); a timeout or a stop signal is a failure."""
    if run.start_error is not None:
        return "not_run", f"Tests could not run: {run.start_error}"
    if run.signalled:
        return "failed", f"Tests stopped by {run.signalled}: {plan.label}"
    if run.timed_out:
        return "failed", f"Tests timed out after {plan.timeout:g} s: {plan.label}"
    if run.exit_code == 0:
        return "passed", f"Tests passed: {plan.label}"
    reason = not_run_reason(run)
    if reason is not None:
        return "not_run", f"Tests could not run: {reason}"
    return "failed", f"Tests failed (exit {run.exit_code}): {plan.label}"


def not_run_reason(run: AgentRun) -> str | None:
    """The line saying the test tool is missing (pytest, the make target), or the last output line
    when the shell could not find or execute the command (126/127); None for a real failure."""
    lines = [line.strip() for line in run.tail if line.strip()]
    for line in reversed(lines):
        if NOT_RUN_OUTPUT.search(line):
            return line
    if run.exit_code in NOT_RUN_EXIT_CODES:
        return lines[-1] if lines else f"exit code {run.exit_code}"
    return None


def bounded_tail(lines: list[str]) -> str:
    """The last TEST_TAIL_LINES lines, and at most TEST_TAIL_CHARS characters of them (the end kept)."""
    return "\n".join(lines[-TEST_TAIL_LINES:])[-TEST_TAIL_CHARS:]
