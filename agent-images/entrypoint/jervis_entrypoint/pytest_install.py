"""pytest for a test command whose Python has none: installed once per Python version into a cache
outside the workspace (never into the project or its virtualenv), under a file lock."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from .common import log

#: What `pip install` gets when the test command's Python has no pytest (JERVIS_PYTEST_SPEC overrides;
#: pip's own PIP_INDEX_URL / PIP_FIND_LINKS / PIP_NO_INDEX choose where from).
PYTEST_SPEC = "pytest"
PYTEST_INSTALL_TIMEOUT = 300.0
PROBE_TIMEOUT = 60.0
#: Prints the interpreter's version, then fails when it cannot import pytest.
PYTEST_PROBE = "import sys; print('%d.%d' % sys.version_info[:2], flush=True); import pytest"
INSTALLED_MARKER = ".jervis-installed"


def probe_python(python: str, workspace: Path, env: Mapping[str, str]) -> tuple[str, bool] | None:
    """The interpreter's `major.minor` and whether it imports pytest (from the workspace, as `-m` would);
    None when it cannot be run or says no version."""
    try:
        done = subprocess.run([python, "-c", PYTEST_PROBE], cwd=workspace, env=dict(env), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, errors="replace", timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = done.stdout.strip().splitlines()[:1]
    if not version or not re.fullmatch(r"\d+\.\d+", version[0]):
        return None
    return version[0], done.returncode == 0


def tools_dir(env: Mapping[str, str], workspace: Path) -> Path:
    """`$JERVIS_TOOLS_DIR`, else `$XDG_CACHE_HOME/jervis` or `~/.cache/jervis`; never inside the
    workspace (the tools must not become part of the user's project), the system's temp dir then."""
    configured = (env.get("JERVIS_TOOLS_DIR") or "").strip()
    if configured:
        folder = Path(configured)
    else:
        cache = (env.get("XDG_CACHE_HOME") or "").strip()
        home = (env.get("HOME") or "").strip()
        folder = Path(cache) / "jervis" if cache else Path(home or "/tmp") / ".cache" / "jervis"
    folder = folder.resolve()
    if folder == workspace.resolve() or workspace.resolve() in folder.parents:
        folder = Path("/tmp") / "jervis-tools"
    return folder


def install_pytest(python: str, version: str, spec: str, target: Path,
                   env: Mapping[str, str]) -> tuple[bool, list[str]]:
    """Install `spec` into `target` unless it is already there for that spec; one installer at a time
    (fcntl lock beside it), into a fresh directory renamed into place, so no run sees half an install."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = target / INSTALLED_MARKER
        if marker.is_file() and marker.read_text(encoding="utf-8").strip() == spec:
            log(f"pytest for Python {version}: reusing {target}")
            return True, []
        fresh = target.parent / f".{target.name}.{os.getpid()}.tmp"
        remove_tree(fresh)
        started = time.monotonic()
        log(f"pytest for Python {version}: {python} has none; installing {spec} into {target}")
        ok, output = pip_install(python, version, spec, fresh, env)
        if not ok:
            remove_tree(fresh)
            return False, output
        (fresh / INSTALLED_MARKER).write_text(spec + "\n", encoding="utf-8")
        remove_tree(target)
        os.replace(fresh, target)
        log(f"pytest for Python {version}: installed in {time.monotonic() - started:.1f} s")
        return True, output


def pip_install(python: str, version: str, spec: str, target: Path, env: Mapping[str, str]) -> tuple[bool, list[str]]:
    """`<python> -m pip install --target`; a Python without pip (a venv made `--without-pip`) gets the
    entrypoint's own pip, told the version, and wheels only (pytest and its dependencies are pure Python)."""
    options = ["install", "--target", str(target), "--no-input", "--disable-pip-version-check", "--quiet"]
    attempts = [[python, "-m", "pip", *options, spec]]
    if os.path.abspath(sys.executable) != os.path.abspath(python):  # a venv's python links to its base
        attempts.append([sys.executable, "-m", "pip", *options, "--python-version", version,
                         "--only-binary=:all:", spec])
    output: list[str] = []
    for attempt in attempts:
        try:
            done = subprocess.run(attempt, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  errors="replace", timeout=PYTEST_INSTALL_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            return False, [f"pip install timed out after {PYTEST_INSTALL_TIMEOUT:g} s"]
        except OSError as exc:
            output = [f"{type(exc).__name__}: {exc}"]
            continue
        output = (done.stdout + done.stderr).splitlines()
        if done.returncode == 0:
            return True, output
        if not any("No module named pip" in line for line in output):
            return False, output  # pip ran and failed (offline, no such version): another pip would too
    return False, output


def remove_tree(path: Path) -> None:
    """Remove a directory tree (or file) if it is there; never follows a symlink."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        import shutil  # only an install needs it
        shutil.rmtree(path)
