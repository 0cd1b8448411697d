"""The local runner's Aider: installed once into its own virtualenv, reused afterwards.

Aider pins its own litellm (and some 150 other packages, about 700 MB), so it never shares the
service's virtualenv. The first use pays a one-time `pip install` (1-3 minutes with a warm pip
cache), reported with a progress line like the embedded model's download; a marker file naming the
package spec marks a finished install, so a changed pin reinstalls. The agent image and the
Dockerfile install the same pin (agent-images/aider/Dockerfile).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from app.runtime.installs import is_marked, locked, mark, pip_progress, run_logged

AIDER_SPEC = "aider-chat==0.86.2"

Log = Callable[[str], None]


class AiderInstallError(RuntimeError):
    """Aider could not be installed (no package index, no disk space, a broken virtualenv)."""


def aider_bin_dir(venv: Path) -> Path:
    return venv / "bin"


def is_installed(venv: Path, spec: str = AIDER_SPEC) -> bool:
    return (aider_bin_dir(venv) / "aider").is_file() and is_marked(venv, spec)


def ensure_aider(venv: Path, *, spec: str = AIDER_SPEC, python: str = sys.executable,
                 log: Log = print) -> Path:
    """The bin directory of a virtualenv at `venv` holding `spec`; installs it the first time.

    Blocking (pip); the service calls it in a thread. A half-finished install (no marker) is
    removed and done again. Raises AiderInstallError with pip's output tail.
    """
    venv = Path(venv)
    if is_installed(venv, spec):
        return aider_bin_dir(venv)
    try:
        return _install(venv, spec, python, log)
    except OSError as exc:  # an unwritable cache, a full disk
        raise AiderInstallError(f"installing {spec} into {venv}: {exc}") from exc


def _install(venv: Path, spec: str, python: str, log: Log) -> Path:
    with locked(venv.parent):
        if is_installed(venv, spec):  # another launcher finished it while we waited
            return aider_bin_dir(venv)
        log(f"aider: installing {spec} into {venv} (once; about 700 MB, 1-3 minutes) …")
        started = time.monotonic()
        if venv.exists():
            shutil.rmtree(venv)
        install_log = venv.parent / f"{venv.name}-install.log"
        run_logged([python, "-m", "venv", str(venv)], install_log, what=f"creating the virtualenv {venv}",
                   error=AiderInstallError)
        run_logged([str(aider_bin_dir(venv) / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                    "--no-input", "--progress-bar", "off", spec],
                   install_log, what=f"pip install {spec}", error=AiderInstallError,
                   on_line=pip_progress(log, started, name="aider"))
        _check_version(venv, spec)
        mark(venv, spec)
        log(f"aider: {spec} installed in {time.monotonic() - started:.0f} s")
        return aider_bin_dir(venv)


def _check_version(venv: Path, spec: str) -> None:
    """`aider --version` must run and name the pinned version (a broken install is not marked done)."""
    wanted = spec.partition("==")[2]
    try:
        done = subprocess.run([str(aider_bin_dir(venv) / "aider"), "--version"], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AiderInstallError(f"aider --version did not run after the install: {exc}") from exc
    version = re.search(r"\d+\.\d+\.\d+", done.stdout)
    if done.returncode != 0 or version is None or (wanted and version.group(0) != wanted):
        raise AiderInstallError(f"aider --version after the install gave exit {done.returncode}: "
                                f"{(done.stdout + done.stderr)[-500:]}")
