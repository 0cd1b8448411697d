"""The embedded local LLM of the dev launcher: llama.cpp's server, or llama-cpp-python's.

Without a reachable Ollama, `python -m app.dev` runs Qwen2.5-Coder-1.5B-Instruct on a free
loopback port, like the embedded nx-27017. This module is the server process and that choice; the
weights come from `app/dev/model_download.py`, the server programs from `app/dev/server_build.py`
(llama.cpp's `llama-server`, built from the sdist's vendored source) and `app/dev/model_install.py`
(llama-cpp-python's, the fallback when llama-server cannot be built); `python -m app.dev prepare`
runs them, cached under `.cache/llm/`.

llama-server decodes several requests at once (`--parallel` slots, continuous batching), so a
second run, an epic's parallel goals or the terminal client generate beside a running answer
instead of waiting for it; llama-cpp-python's server answers one request at a time
(`bench/model_server.py` measures both on the same model and threads).
"""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

from app.dev.loopback_server import LaunchedServer, LoopbackServer, Readiness
from app.dev.model_cache import EmbeddedModelError

#: The model name the server answers to and what litellm is given (`openai/<alias>`).
MODEL_ALIAS = "qwen2.5-coder-1.5b"
#: Context window of one request (of each of llama-server's slots): a prompt plus its call's output
#: cap must fit (a transcript correction asks for up to 8192 output tokens; the orchestration's own
#: calls 300-1500).
DEFAULT_CONTEXT_TOKENS = 16384
#: Requests llama-server decodes at once; each slot has its own `context_tokens` of KV cache
#: (~28 KB a token for this model: 0.45 GB a slot at 16k). Measured in `bench/model_server.py`.
DEFAULT_SLOTS = 4
#: llama-server's speculative decoding: drafts looked up in the n-grams of the prompt and answer so
#: far, verified in one batch (no draft model). A whole-file edit copies most of its file: measured
#: on such rewrites, 34 instead of 16 tokens/s a stream, every draft accepted; no loss on new code.
DRAFT = "ngram-simple"
#: RAM for llama-server's cache of idle slots' prompts (its default is 8 GB): a returning run's
#: prompt prefix is restored instead of computed again.
PROMPT_CACHE_MIB = 1024

_STOP_GRACE_SECONDS = 10.0
_PROBE_SECONDS = 2.0
#: Environment the server child keeps. llama_cpp.server reads HOST, PORT, CONFIG_FILE and every
#: setting (API_KEY, MODEL, N_CTX, ...) from the environment, over its command line; the
#: service's own PORT=8090 would otherwise move the model onto the service's port.
_CHILD_ENV_KEYS = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "USER", "LOGNAME")
#: Loopback and Ollama checks must not go through an HTTP proxy from the environment.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_FALSE = {"0", "false", "no", "off"}


def default_threads() -> int:
    """Generation threads: half the cores (llama.cpp's own default).

    Measured on 2 shared cores: 1 thread generates a steady 10-14 tokens/s, 2 threads swing
    between 2 and 16 tokens/s as soon as anything else (the service, a test run) wants a core.
    Prompt processing is compute-bound and keeps all cores (`batch_threads`).
    """
    return max(1, (os.cpu_count() or 1) // 2)


class EmbeddedModel(LaunchedServer):
    """An OpenAI-compatible server for one GGUF on a free 127.0.0.1 port: llama.cpp's
    `llama-server` at `program` with `slots` requests decoded at once, else (`program` None)
    llama-cpp-python's server of `python`, one request at a time.

    The child gets SIGTERM when the thread that started it dies (PR_SET_PDEATHSIG, as for
    EmbeddedMongo): start it from the main thread. On llama-cpp-python's server requests queue
    instead of interrupting each other (its default cuts a running stream short when a new request
    arrives).
    """

    def __init__(
        self,
        model_path: Path,
        *,
        work_dir: Path,
        alias: str = MODEL_ALIAS,
        python: Path | str | None = None,
        program: Path | str | None = None,
        slots: int = DEFAULT_SLOTS,
        draft: str | None = DRAFT,
        context_tokens: int = DEFAULT_CONTEXT_TOKENS,
        threads: int | None = None,
        batch_threads: int | None = None,
        pick_port: Callable[[], int] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """`context_tokens`: the context of one request (llama-server's is `slots` times that);
        `draft`: llama-server's `--spec-type` (None: no speculative decoding);
        `env`: variables the server child gets besides the few it keeps of ours (`_CHILD_ENV_KEYS`)."""
        self.model_path = Path(model_path).absolute()  # the server runs in `work_dir`
        self.env = dict(env or {})
        self.work_dir = Path(work_dir)
        self.alias = alias
        self.python = Path(python) if python is not None else Path(sys.executable)
        self.program = Path(program).absolute() if program is not None else None
        self.slots = slots if self.program is not None else 1
        self.draft = draft if self.program is not None else None
        self.context_tokens = context_tokens
        self.threads = threads or default_threads()
        self.batch_threads = batch_threads or os.cpu_count() or 1
        self.log_file = self.work_dir / "llama-server.log"
        self._server = LoopbackServer(
            "the model server", self.log_file, ready_what="answer GET /v1/models",
            stop_seconds=_STOP_GRACE_SECONDS, pick_port=pick_port, poll_seconds=0.2, error=EmbeddedModelError,
        )

    @property
    def api_base(self) -> str:
        """`http://127.0.0.1:<port>/v1`, for litellm's `api_base`."""
        if self._server.port is None:
            raise EmbeddedModelError("EmbeddedModel is not started")
        return f"http://127.0.0.1:{self._server.port}/v1"

    @property
    def litellm_model(self) -> str:
        return f"openai/{self.alias}"

    @property
    def pid(self) -> int | None:
        return self._server.pid

    def start(self, timeout: float = 120.0) -> str:
        """Spawn the server and block until `GET /v1/models` lists the alias; return api_base."""
        if self._server.running():
            return self.api_base
        if not self.model_path.is_file():
            raise EmbeddedModelError(f"model file not found: {self.model_path}")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        env = {key: os.environ[key] for key in _CHILD_ENV_KEYS if key in os.environ}
        env |= {"PYTHONUNBUFFERED": "1", **self.env}
        self._server.start(self.command, self._lists_alias, timeout=timeout, cwd=self.work_dir, env=env)
        return self.api_base

    @property
    def server_name(self) -> str:
        """Which server program runs, for the launcher's log and state file."""
        if self.program is None:
            return "llama-cpp-python (one request at a time)"
        drafts = f", {self.draft} drafts" if self.draft else ""
        return f"llama-server ({self.slots} slots of {self.context_tokens} tokens{drafts})"

    def command(self, port: int) -> list[str]:
        if self.program is not None:
            return self._llama_server_command(port)
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
            # llama-cpp-python's server keeps the logits of every prompt position by default: an
            # n_ctx × vocabulary float32 array (~20 GB at 32k tokens), touched page by page as prompts
            # grow, so its memory followed the longest prompt seen (5.8 → 10.3 GB over a session).
            # Nothing here asks for logprobs: only the last position's logits are kept.
            "--logits_all", "false",
        ]

    def _llama_server_command(self, port: int) -> list[str]:
        assert self.program is not None
        return [
            str(self.program),
            "--model", str(self.model_path),
            "--alias", self.alias,
            "--host", "127.0.0.1",
            "--port", str(port),
            # Each slot gets an equal share of the context (the KV cache is not unified): every
            # request may use `context_tokens`, whatever the others hold.
            "--parallel", str(self.slots),
            "--ctx-size", str(self.slots * self.context_tokens),
            "--fit", "off",  # the context as given, not shrunk to the free memory
            "--threads", str(self.threads),
            "--threads-batch", str(self.batch_threads),
            "--cache-ram", str(PROMPT_CACHE_MIB),
            "--no-webui",
            # What an agent reaching the model (through the sandbox's relay) must not get: other
            # runs' prompts (`GET /slots`), and answers read by any web page open in a browser here.
            "--no-slots",
            "--cors-origins", "localhost",
            *(["--spec-type", self.draft] if self.draft else []),
        ]

    def measure_speed(self, tokens: int = 32, timeout: float = 120.0) -> float | None:
        """Generation tokens per second of a short answer, as llama.cpp logs it (the answer also
        loads the weights the first real call would wait for); None when the server does not answer."""
        body = json.dumps({"model": self.alias, "max_tokens": tokens, "temperature": 0,
                           "messages": [{"role": "user", "content": "Count from 1 to 100, separated by spaces."}]})
        request = urllib.request.Request(f"{self.api_base}/chat/completions", data=body.encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with _NO_PROXY.open(request, timeout=timeout) as response:
                answer = json.loads(response.read())
        except (OSError, ValueError):
            return None
        timings = answer.get("timings") if isinstance(answer, dict) else None  # llama-server's
        if isinstance(timings, dict) and isinstance(timings.get("predicted_per_second"), int | float):
            return float(timings["predicted_per_second"])
        return _speed_from_log(self.log_file)

    def state(self) -> dict[str, str]:
        """What the launcher writes for tools that talk to the model directly (the benchmarks)."""
        return {"api_base": self.api_base, "model": self.litellm_model, "log": str(self.log_file),
                "server": self.server_name, "slots": str(self.slots)}

    def _lists_alias(self, port: int, _pid: int) -> Readiness:
        """READY when `/v1/models` lists our alias; another server's list means FOREIGN."""
        try:
            with _NO_PROXY.open(f"http://127.0.0.1:{port}/v1/models", timeout=_PROBE_SECONDS) as response:
                body = json.loads(response.read())
        except (OSError, ValueError):
            return Readiness.NOT_YET
        data = body.get("data", []) if isinstance(body, dict) else []
        ids = {entry.get("id") for entry in data if isinstance(entry, dict)}
        return Readiness.READY if self.alias in ids else Readiness.FOREIGN


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


_EVAL_LINE = re.compile(r"^llama_perf_context_print:\s+eval time =.*?([\d.]+) tokens per second\)", re.MULTILINE)


def _speed_from_log(log: Path) -> float | None:
    """The generation speed llama.cpp printed for the last call (`eval time = … tokens per second`)."""
    try:
        found = _EVAL_LINE.findall(log.read_text(errors="replace")[-20_000:])
    except OSError:
        return None
    return float(found[-1]) if found else None
