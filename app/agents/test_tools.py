"""pytest for a sandboxed test run, installed by the service before the run starts.

A test run's sandbox has no network at all: the project's tests (model-written code) reach
nothing. But a test command `<python> -m pytest …` whose Python has no pytest used to get it
installed by the entrypoint, from inside, with pip. So the service does it first, outside:

1. which Python version the command's interpreter is, and whether it imports pytest, is asked in
   the step's own sandbox (the interpreter may be the workspace's `.venv/bin/python`, which an
   agent could have replaced: it never runs outside the sandbox);
2. when it has none, the service's own pip installs the wheels for that version
   (`--python-version X --only-binary=:all:`: nothing from the workspace runs, nothing is built)
   into the client's tool cache, with the entrypoint's layout, lock and marker
   (`agent-images/entrypoint/jervis_entrypoint/pytest_install.py`), which then finds it there
   and reuses it.

A failure here is only logged: the entrypoint then reports the tests as not run, as before.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from app.agents.confinement import UnsafeReadError, read_text_inside

log = logging.getLogger(__name__)

TEST_PLAN = Path(".jervis") / "test.json"
PYTEST_SPEC = "pytest"
#: Prints the interpreter's version, then fails when it cannot import pytest (the entrypoint's probe).
PYTEST_PROBE = "import sys; print('%d.%d' % sys.version_info[:2], flush=True); import pytest"
INSTALLED_MARKER = ".jervis-installed"
PROBE_TIMEOUT_SECONDS = 60.0
INSTALL_TIMEOUT_SECONDS = 300.0


async def provide_pytest(workspace: Path, tools: Path, env: dict[str, str],
                         confine: Callable[[list[str]], list[str]]) -> str | None:
    """Install pytest into `tools` when the run's test command needs it; what was done, or None.
    `confine` wraps a command in the step's sandbox."""
    python = _pytest_python(workspace)
    if python is None:
        return None
    probe = await _probe(confine([python, "-c", PYTEST_PROBE]), env)
    if probe is None:
        return None
    version, has_pytest = probe
    if has_pytest:
        return None
    spec = (env.get("JERVIS_PYTEST_SPEC") or "").strip() or PYTEST_SPEC
    return await asyncio.to_thread(_install, tools / f"pytest-py{version}", version, spec)


def _pytest_python(workspace: Path) -> str | None:
    """The interpreter of a `[python, "-m", "pytest", …]` test plan (the only form that gets pytest)."""
    try:
        plan = json.loads(read_text_inside(workspace, TEST_PLAN, max_bytes=64 * 1024))
    except (OSError, UnsafeReadError, ValueError):
        return None
    command = plan.get("command") if isinstance(plan, dict) else None
    if isinstance(command, list) and len(command) >= 3 and all(isinstance(arg, str) for arg in command) \
            and command[1:3] == ["-m", "pytest"] and command[0]:
        return str(command[0])
    return None


async def _probe(argv: list[str], env: dict[str, str]) -> tuple[str, bool] | None:
    try:
        process = await asyncio.create_subprocess_exec(*argv, env=env, stdin=subprocess.DEVNULL,
                                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                                       start_new_session=True)
    except OSError:
        return None
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_SECONDS):
            out, _ = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        return None
    version = out.decode(errors="replace").strip().splitlines()[:1]
    if not version or not re.fullmatch(r"\d+\.\d+", version[0]):
        return None
    return version[0], process.returncode == 0


def _install(target: Path, version: str, spec: str) -> str:
    """The entrypoint's install, done by the service's pip for `version`: a fresh directory renamed
    into place under the same lock, marked with the spec."""
    target.parent.mkdir(parents=True, exist_ok=True)
    # the tool cache is writable by test runs: no link is followed on the way in
    lock = os.open(target.parent / f"{target.name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = target / INSTALLED_MARKER
        if marker.is_file() and not marker.is_symlink() and marker.read_text(encoding="utf-8").strip() == spec:
            return f"pytest for Python {version}: already in {target}"
        fresh = target.parent / f".{target.name}.{os.getpid()}.tmp"
        shutil.rmtree(fresh, ignore_errors=True)
        argv = [sys.executable, "-m", "pip", "install", "--target", str(fresh), "--no-input",
                "--disable-pip-version-check", "--quiet", "--python-version", version, "--only-binary=:all:", spec]
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                                  timeout=INSTALL_TIMEOUT_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            shutil.rmtree(fresh, ignore_errors=True)
            log.warning("pytest for Python %s could not be installed: %s", version, exc)
            return f"pytest for Python {version}: not installed ({exc})"
        if done.returncode != 0:
            shutil.rmtree(fresh, ignore_errors=True)
            reason = next((line for line in reversed((done.stdout + done.stderr).splitlines()) if line.strip()), "")
            log.warning("pytest for Python %s could not be installed: %s", version, reason)
            return f"pytest for Python {version}: not installed ({reason[:200]})"
        (fresh / INSTALLED_MARKER).write_text(spec + "\n", encoding="utf-8")
        if target.is_symlink():
            target.unlink()
        shutil.rmtree(target, ignore_errors=True)
        os.replace(fresh, target)
        log.info("pytest for Python %s: installed into %s for a test run", version, target)
        return f"pytest for Python {version}: installed into {target} by the service"
    finally:
        os.close(lock)
