"""The embedded model's server program: llama-cpp-python[server] installed into the virtualenv once.

llama-cpp-python is built from its sdist with `CMAKE_ARGS=-DGGML_NATIVE=OFF` (the native build
crashed in its AMX code path on the machines this was measured on) into a wheel kept in
`.cache/llm/wheels/`, then installed with its `[server]` extra, constrained by requirements.txt so
no pinned service package moves. It is the fallback: `prepare()` downloads the model
(`app/dev/model_download.py`) and builds llama.cpp's own server (`app/dev/server_build.py`), and
installs llama-cpp-python only when that cannot be built, before the launcher starts the server
(`app/dev/embedded_model.py`).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

from app.dev.model_cache import (
    DEFAULT_CACHE_DIR,
    PROJECT_ROOT,
    REQUIREMENTS_FILE,
    EmbeddedModelError,
    Log,
    build_progress,
    pinned_llama_cpp_version,
    print_line,
)
from app.dev.model_download import ensure_model
from app.dev.server_build import ensure_llama_server
from app.runtime.installs import LOG_TAIL_CHARS, locked, run_logged

CONSTRAINTS_FILE = PROJECT_ROOT / "requirements.txt"
BUILD_CMAKE_ARGS = "-DGGML_NATIVE=OFF"


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
        on_line=build_progress(log), env=env,
    )
    if not list(wheels.glob(f"llama_cpp_python-{version}-*.whl")):
        raise EmbeddedModelError(f"the build left no llama-cpp-python wheel in {wheels}; see {build_log}")
    log(f"llm server: llama-cpp-python {version} built in {time.monotonic() - started:.0f}s")


def prepare(venv: Path, cache_dir: Path = DEFAULT_CACHE_DIR, log: Log = print_line) -> tuple[Path, Path | None]:
    """Install the model and a server program (each once); return the model's path and
    llama-server's, None when it cannot be built and llama-cpp-python's server is installed instead.

    The download comes first: a network problem shows in seconds, not after a 10-minute build.
    llama-cpp-python is built only when llama-server cannot be (no cmake, a failed build): it serves
    one request at a time, llama-server several (`app/dev/embedded_model.py`).
    """
    model = ensure_model(cache_dir, log=log)
    try:
        return model, ensure_llama_server(Path(venv) / "bin" / "python", cache_dir=cache_dir, log=log)
    except EmbeddedModelError as exc:
        log(f"llm server: llama-server cannot be built ({str(exc).splitlines()[0]}); falling back to "
            "llama-cpp-python's server, which answers one request at a time")
    ensure_server_installed(venv, cache_dir=cache_dir, log=log)
    return model, None
