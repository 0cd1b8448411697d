"""llama.cpp's own HTTP server (`llama-server`), built once from the llama-cpp-python sdist.

The sdist the embedded model's wheel is built from (`app/dev/model_install.py`) vendors llama.cpp
with its server (`vendor/llama.cpp/tools/server`). Built from there — the same pinned version,
`-DGGML_NATIVE=OFF`, the web UI neither built nor downloaded, only the `llama-server` target, a
static binary — it serves several requests at once (`--parallel` slots, continuous batching), which
llama-cpp-python's server does not (`bench/model_server.py` measures both). The build needs cmake
and a C++ compiler and takes 5-10 minutes on 2 cores; the binary is kept in
`.cache/llm/server-build/` and reused. Nothing else is downloaded: the sdist comes from pip.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import time
from pathlib import Path

from app.dev.model_cache import (
    DEFAULT_CACHE_DIR,
    REQUIREMENTS_FILE,
    EmbeddedModelError,
    Log,
    build_progress,
    pinned_llama_cpp_version,
    print_line,
)
from app.runtime.installs import is_marked, locked, mark, run_logged

#: Under the model cache; the wheel build's own lock, logs and wheels stay apart.
BUILD_DIR = "server-build"
PROGRAM = "llama-server"
#: Names the configuration whose build failed: the next start falls back at once instead of building again.
FAILED = "build-failed"
#: What the build is configured with: CPU features fixed at the baseline llama-cpp-python's wheel
#: is built for (the native build crashed in its AMX path), a static binary, no tests, examples or
#: web UI, and nothing fetched (the UI's prebuilt assets come from Hugging Face unless turned off;
#: no HTTPS client is needed to serve loopback).
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF", "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF",
)


def server_program(cache_dir: Path = DEFAULT_CACHE_DIR, requirements: Path = REQUIREMENTS_FILE) -> Path | None:
    """The built `llama-server` of the pinned version, or None when it was not built (yet)."""
    directory = Path(cache_dir) / BUILD_DIR
    program = directory / PROGRAM
    if program.is_file() and is_marked(directory, _spec(pinned_llama_cpp_version(requirements))):
        return program
    return None


def ensure_llama_server(
    python: Path,
    *,
    cache_dir: Path = DEFAULT_CACHE_DIR,
    requirements: Path = REQUIREMENTS_FILE,
    log: Log = print_line,
) -> Path:
    """Build `llama-server` of the pinned llama-cpp-python version once; return its path.

    `python` runs `pip download` for the sdist. Raises EmbeddedModelError when cmake or a
    compiler is missing or the build fails (the log names the file with the whole output).
    """
    cache_dir = Path(cache_dir)
    version = pinned_llama_cpp_version(requirements)
    directory = cache_dir / BUILD_DIR
    found = server_program(cache_dir, requirements)
    if found is not None:
        return found
    with locked(directory):
        found = server_program(cache_dir, requirements)
        if found is not None:
            return found
        cmake = shutil.which("cmake")
        if cmake is None:
            raise EmbeddedModelError("cmake is not installed (apt-get install cmake): llama-server cannot be built")
        failed = directory / FAILED
        if failed.is_file() and failed.read_text(encoding="utf-8").strip() == _spec(version):
            raise EmbeddedModelError(f"an earlier build of llama-server failed (see {directory / 'build.log'}); "
                                     f"remove {failed} to try again")
        sdist = _sdist(Path(python), version, directory, log)  # a network failure is tried again next time
        try:
            return _build(sdist, cmake, version, directory, log)
        except EmbeddedModelError:
            failed.write_text(_spec(version) + "\n", encoding="utf-8")  # not tried again at every start
            raise


def _build(sdist: Path, cmake: str, version: str, directory: Path, log: Log) -> Path:
    started = time.monotonic()
    source = _unpack(sdist, directory / "src")
    build = directory / "build"
    shutil.rmtree(build, ignore_errors=True)
    log(f"llm server: building llama-server {version} from the sdist's llama.cpp (once; 5-10 minutes on "
        f"2 cores). Full log: {directory / 'build.log'}")
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    run_logged([cmake, "-S", str(source), "-B", str(build), *generator, *CMAKE_OPTIONS],
               directory / "configure.log", what="configuring llama-server", error=EmbeddedModelError)
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
    run_logged([cmake, "--build", str(build), "--target", PROGRAM], directory / "build.log",
               what=f"building llama-server {version}", error=EmbeddedModelError,
               on_line=build_progress(log), env=env)
    built = build / "bin" / PROGRAM
    if not built.is_file():
        raise EmbeddedModelError(f"the build left no {built}; see {directory / 'build.log'}")
    partial = directory / f"{PROGRAM}.partial"
    shutil.copy2(built, partial)
    partial.replace(directory / PROGRAM)
    mark(directory, _spec(version))
    shutil.rmtree(build, ignore_errors=True)  # ~300 MB of objects; the binary is all that runs
    shutil.rmtree(directory / "src", ignore_errors=True)
    log(f"llm server: llama-server {version} built in {time.monotonic() - started:.0f}s")
    return directory / PROGRAM


def _spec(version: str) -> str:
    """What the marker names: a changed pin or configuration builds again."""
    return f"{PROGRAM} llama-cpp-python=={version} {' '.join(CMAKE_OPTIONS)}"


def _sdist(python: Path, version: str, directory: Path, log: Log) -> Path:
    """The llama-cpp-python sdist in `directory`, downloaded by pip the first time."""
    sdist = directory / f"llama_cpp_python-{version}.tar.gz"
    if sdist.is_file():
        return sdist
    log(f"llm server: downloading the llama-cpp-python {version} sdist (~75 MB) …")
    run_logged([str(python), "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
                "--no-binary", ":all:", "-d", str(directory), f"llama-cpp-python=={version}"],
               directory / "download.log", what=f"pip download llama-cpp-python=={version}", error=EmbeddedModelError)
    if not sdist.is_file():
        raise EmbeddedModelError(f"pip left no {sdist.name} in {directory}; see {directory / 'download.log'}")
    return sdist


def _unpack(sdist: Path, target: Path) -> Path:
    """Extract the sdist's vendored llama.cpp under `target`; return its source directory."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(target, filter="data")
    found = sorted(target.glob("*/vendor/llama.cpp/tools/server/CMakeLists.txt"))
    if not found:
        raise EmbeddedModelError(f"{sdist.name} has no vendor/llama.cpp/tools/server")
    return found[0].parents[2]
