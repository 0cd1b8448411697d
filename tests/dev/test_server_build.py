"""Building llama-server from the sdist, with a fake cmake on PATH: nothing here compiles or
downloads (the sdist is a tiny tarball of the right shape, placed where pip would leave it)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from app.dev.model_cache import EmbeddedModelError
from app.dev.server_build import BUILD_DIR, CMAKE_OPTIONS, FAILED, ensure_llama_server, server_program

VERSION = "0.3.36"
#: A cmake that records its command lines; `--build` leaves build/bin/llama-server, or fails when
#: the source tree has a FAIL file.
FAKE_CMAKE = """#!/bin/sh
echo "$@" >> "{calls}"
if [ "$1" = "--build" ]; then
  if [ -f "$(cat "$2/source")/FAIL" ]; then echo "error: no compiler" >&2; exit 1; fi
  echo "[1/2] Building CXX object server.cpp.o"
  mkdir -p "$2/bin" && printf '#!/bin/sh\\necho fake llama-server\\n' > "$2/bin/llama-server"
  chmod +x "$2/bin/llama-server"
else
  mkdir -p "$4" && echo "$2" > "$4/source"
fi
"""


@pytest.fixture
def requirements(tmp_path: Path) -> Path:
    path = tmp_path / "requirements-llm.txt"
    path.write_text(f"llama-cpp-python[server]=={VERSION}\n")
    return path


@pytest.fixture
def cmake_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake cmake first on PATH; the file its calls are written to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "cmake-calls.txt"
    cmake = bin_dir / "cmake"
    cmake.write_text(FAKE_CMAKE.format(calls=calls))
    cmake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return calls


def _sdist(cache: Path, *, fail: bool = False) -> None:
    """A tarball shaped like llama-cpp-python's sdist, already downloaded."""
    directory = cache / BUILD_DIR
    directory.mkdir(parents=True)
    top = f"llama_cpp_python-{VERSION}/vendor/llama.cpp"
    files = {f"{top}/CMakeLists.txt": b"project(llama.cpp)\n", f"{top}/tools/server/CMakeLists.txt": b"\n"}
    if fail:
        files[f"{top}/FAIL"] = b""
    with tarfile.open(directory / f"llama_cpp_python-{VERSION}.tar.gz", "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def test_llama_server_is_built_once_from_the_sdists_llama_cpp_without_the_web_ui(
        tmp_path: Path, requirements: Path, cmake_calls: Path) -> None:
    cache = tmp_path / "cache"
    _sdist(cache)
    assert server_program(cache, requirements) is None
    lines: list[str] = []
    program = ensure_llama_server(tmp_path / "no-python", cache_dir=cache, requirements=requirements, log=lines.append)
    assert program == cache / BUILD_DIR / "llama-server" and program.is_file()
    configure, build = cmake_calls.read_text().splitlines()
    assert configure.split()[1].endswith(f"llama_cpp_python-{VERSION}/vendor/llama.cpp")
    assert "-DGGML_NATIVE=OFF" in configure and "-DLLAMA_BUILD_UI=OFF" in configure
    assert "-DLLAMA_USE_PREBUILT_UI=OFF" in configure  # the UI's assets are not fetched either
    assert set(CMAKE_OPTIONS) <= set(configure.split())
    assert build.endswith("--target llama-server")
    assert any("building llama-server" in line for line in lines) and any("built in" in line for line in lines)
    assert not (cache / BUILD_DIR / "build").exists() and not (cache / BUILD_DIR / "src").exists()

    assert server_program(cache, requirements) == program
    assert ensure_llama_server(tmp_path, cache_dir=cache, requirements=requirements, log=lines.append) == program
    assert len(cmake_calls.read_text().splitlines()) == 2  # not built again


def test_a_changed_pin_builds_again(tmp_path: Path, requirements: Path, cmake_calls: Path) -> None:
    cache = tmp_path / "cache"
    _sdist(cache)
    ensure_llama_server(tmp_path, cache_dir=cache, requirements=requirements, log=lambda _: None)
    requirements.write_text("llama-cpp-python[server]==0.3.99\n")
    assert server_program(cache, requirements) is None


def test_a_failed_build_is_reported_and_not_tried_again_at_the_next_start(
        tmp_path: Path, requirements: Path, cmake_calls: Path) -> None:
    cache = tmp_path / "cache"
    _sdist(cache, fail=True)
    with pytest.raises(EmbeddedModelError, match=r"(?s)building llama-server .* failed.*no compiler"):
        ensure_llama_server(tmp_path, cache_dir=cache, requirements=requirements, log=lambda _: None)
    assert (cache / BUILD_DIR / FAILED).is_file() and server_program(cache, requirements) is None
    calls = len(cmake_calls.read_text().splitlines())
    with pytest.raises(EmbeddedModelError, match=f"earlier build of llama-server failed.*remove .*{FAILED}"):
        ensure_llama_server(tmp_path, cache_dir=cache, requirements=requirements, log=lambda _: None)
    assert len(cmake_calls.read_text().splitlines()) == calls


def test_without_cmake_the_build_is_refused_before_anything_is_fetched(
        tmp_path: Path, requirements: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(EmbeddedModelError, match="cmake is not installed"):
        ensure_llama_server(tmp_path / "no-python", cache_dir=tmp_path / "cache", requirements=requirements,
                            log=lambda _: None)
    assert not list((tmp_path / "cache" / BUILD_DIR).glob("*.tar.gz"))
