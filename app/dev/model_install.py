"""The embedded model's server program: llama-cpp-python[server] installed into the virtualenv once.

llama-cpp-python is built from its sdist with `CMAKE_ARGS=-DGGML_NATIVE=OFF` (the native build
crashed in its AMX code path on the machines this was measured on) into a wheel kept in
`.cache/llm/wheels/`, then installed with its `[server]` extra, constrained by requirements.txt so
no pinned service package moves. `prepare()` does this and the model download
(`app/dev/model_download.py`) before the launcher starts the server (`app/dev/embedded_model.py`).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from app.dev.model_cache import DEFAULT_CACHE_DIR, PROJECT_ROOT, EmbeddedModelError, Log, print_line
from app.dev.model_download import ensure_model
from app.runtime.installs import LOG_TAIL_CHARS, locked, run_logged

REQUIREMENTS_FILE = PROJECT_ROOT / "requirements-llm.txt"
CONSTRAINTS_FILE = PROJECT_ROOT / "requirements.txt"
BUILD_CMAKE_ARGS = "-DGGML_NATIVE=OFF"


def pinned_llama_cpp_version(requirements: Path = REQUIREMENTS_FILE) -> str:
    match = re.search(r"^llama-cpp-python(?:\[[^\]]*\])?==([\w.]+)", requirements.read_text(), re.M)
    if not match:
        raise EmbeddedModelError(f"{requirements} pins no llama-cpp-python version")
    return match.group(1)


def ensure_server_installed(
    venv: Path = PROJECT_ROOT / ".venv",
    *,
    cache_dir: Path = DEFAULT_CACHE_DIR,
    requirements: Path = REQUIREMENTS_FILE,
    constraints: Path = CONSTRAINTS_FILE,
    log: Log = print_line,
) -> None:
    """Install requirements-llm.txt (llama-cpp-python[server]) into `venv`, once.

    The llama-cpp-python wheel is built from the sdist (5-10 minutes on 2 cores) into
    `cache_dir/wheels`, so a recreated virtualenv installs it again in seconds. A stamp in the
    virtualenv, named after the requirement files' hash, marks a finished install.
    """
    venv = Path(venv)
    python = venv / "bin" / "python"
    if not python.is_file():
        raise EmbeddedModelError(f"no virtualenv interpreter at {python}")
    key = hashlib.sha256(requirements.read_bytes() + constraints.read_bytes()).hexdigest()[:16]
    stamp = venv / f".installed-llm-{key}"
    if stamp.is_file():
        return
    cache_dir = Path(cache_dir)
    wheels = cache_dir / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    version = pinned_llama_cpp_version(requirements)
    with locked(cache_dir):
        if stamp.is_file():
            return
        if not list(wheels.glob(f"llama_cpp_python-{version}-*.whl")):
            _build_wheel(python, version, wheels, cache_dir / "build.log", log)
        log(f"llm server: installing {requirements.name} into {venv} …")
        started = time.monotonic()
        run_logged(
            [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q",
             "--find-links", str(wheels), "--only-binary", "llama-cpp-python",
             "-r", str(requirements), "-c", str(constraints)],
            cache_dir / "install.log", what="pip install -r " + requirements.name, error=EmbeddedModelError,
        )
        check = subprocess.run([str(python), "-c", "import llama_cpp.server.app"],
                               stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if check.returncode != 0:
            raise EmbeddedModelError(
                f"llama_cpp.server does not import after install:\n{check.stderr[-LOG_TAIL_CHARS:]}"
            )
        stamp.touch()
        log(f"llm server: installed in {time.monotonic() - started:.1f}s")


def _build_wheel(python: Path, version: str, wheels: Path, build_log: Path, log: Log) -> None:
    log(f"llm server: building llama-cpp-python {version} from source with {BUILD_CMAKE_ARGS} "
        f"(once; 5-10 minutes on 2 cores). Full log: {build_log}")
    env = dict(os.environ)
    env["CMAKE_ARGS"] = f"{env.get('CMAKE_ARGS', '')} {BUILD_CMAKE_ARGS}".strip()  # ours wins
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
    started = time.monotonic()
    run_logged(
        # --no-cache-dir: pip's wheel cache is keyed by the sdist, not by CMAKE_ARGS, and could
        # hand back a native build made elsewhere on this machine.
        [str(python), "-m", "pip", "wheel", "--disable-pip-version-check", "--no-deps", "-v",
         "--no-cache-dir", "--no-binary", "llama-cpp-python", "-w", str(wheels),
         f"llama-cpp-python=={version}"],
        build_log, what=f"building llama-cpp-python {version}", error=EmbeddedModelError,
        on_line=_build_progress(log), env=env,
    )
    if not list(wheels.glob(f"llama_cpp_python-{version}-*.whl")):
        raise EmbeddedModelError(f"the build left no llama-cpp-python wheel in {wheels}; see {build_log}")
    log(f"llm server: llama-cpp-python {version} built in {time.monotonic() - started:.0f}s")


_NINJA_STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]")


def _build_progress(log: Log) -> Callable[[str], None]:
    """A line callback that reports the build's ninja steps every 10 %."""
    started = time.monotonic()
    next_percent = 10

    def on_line(line: str) -> None:
        nonlocal next_percent
        step = _NINJA_STEP.match(line)
        if step:
            percent = int(step.group(1)) * 100 // max(int(step.group(2)), 1)
            if percent >= next_percent:
                next_percent = percent // 10 * 10 + 10
                log(f"llm server: build {percent:3d}% ({time.monotonic() - started:.0f}s)")

    return on_line


def prepare(venv: Path, cache_dir: Path = DEFAULT_CACHE_DIR, log: Log = print_line) -> Path:
    """Install the model and the server (each once); return the model path.

    The download comes first: a network problem shows in seconds, not after a 10-minute build.
    """
    model = ensure_model(cache_dir, log=log)
    ensure_server_installed(venv, cache_dir=cache_dir, log=log)
    return model
