"""Resident memory of the embedded model server across consecutive model calls. Prints the series
and its slope; asserts nothing.

    .venv/bin/python -m bench.model_memory [--calls 50] [--base-url URL --pid PID]
                                           [--server-arg=--logits_all --server-arg=true] [--stand-in]

The server is llama-cpp-python's OpenAI-compatible one as the dev launcher runs it
(app/dev/embedded_model.py: `EmbeddedModel`, the cached Qwen2.5-Coder GGUF, its context size and
threads, `--logits_all false`). Without `--base-url`/`--pid` it starts its own (a free loopback
port; `--server-arg` adds options to its command line, a later one overriding the launcher's:
`--logits_all true` for the server's own default, `--cache true`, `--type_k 8`); with them it
uses a running one (do not point it at a server another benchmark is using: the calls queue
behind each other). `--stand-in` runs the tests' scripted LLM server in a child process instead
of a model: it checks this script, not a model.

Each call is a chat completion of the size the service sends (a node's instructions, a request
and 2-6 k tokens of the repository's own source as context: `--min-tokens`/`--max-tokens`,
varied by a seeded draw), non-streamed, temperature 0, at most `--max-output` tokens. After each
call it samples the server process (/proc): VmRSS, RssAnon (heap: the KV cache, llama-cpp-python's
logits buffer, Python), RssFile (the mapped weights) and VmHWM. The slope is that of RssAnon over
the last two thirds of the calls. With `logits_all` on (llama-cpp-python's server default) the
server keeps the logits of every prompt position (an n_ctx × n_vocab float32 array, touched page
by page as prompts get longer), so RssAnon follows the longest prompt so far: the table shows that
column.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from app.dev.embedded_model import DEFAULT_CONTEXT_TOKENS, EmbeddedModel
from bench.measure import status_fields, tail_slope

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / ".cache" / "llm" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
#: Characters of Python source per token (Qwen's tokenizer, measured on this repository: ~3.5).
CHARS_PER_TOKEN = 3.5
SYSTEM = ("### JERVIS NODE: respond\nYou are Jervis, a coding assistant. Answer the user's question about the "
          "project below in at most five sentences, in the user's language. Quote file names exactly.")
QUESTIONS = ("Co dělá tento kód a kde bych přidal nový endpoint?", "Which module handles retries, and how?",
             "Najdi možné chyby v tomto kódu.", "Summarise the public functions of these files.",
             "Kde se čtou nastavení a jak se validují?")
#: The tests' scripted LLM server, serving until its stdin closes (for `--stand-in`).
STAND_IN = """
import sys
from tests.fixtures.llm_server import ScriptedLlmServer
server = ScriptedLlmServer(models=("stand-in",)).start()
print(server.url, flush=True)
sys.stdin.read()
server.stop()
"""


class TunedModel(EmbeddedModel):
    """EmbeddedModel with extra options on the server's command line."""

    def __init__(self, model_path: Path, *, extra: list[str], **kwargs: Any) -> None:
        super().__init__(model_path, **kwargs)
        self.extra = extra

    def command(self, port: int) -> list[str]:
        return [*super().command(port), *self.extra]


def sources() -> list[tuple[str, str]]:
    return [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sorted((ROOT / "app").rglob("*.py"))
            if p.stat().st_size > 2000]


def prompt(files: list[tuple[str, str]], tokens: int, draw: random.Random) -> list[dict[str, str]]:
    """A request with about `tokens` tokens of source files as context, drawn from `files`."""
    budget = int(tokens * CHARS_PER_TOKEN)
    parts = []
    for name, text in draw.sample(files, len(files)):
        if budget <= 0:
            break
        piece = text[:budget]
        parts.append(f"--- {name}\n{piece}")
        budget -= len(piece) + len(name) + 5
    question = draw.choice(QUESTIONS)
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{question}\n\n" + "\n".join(parts)}]


def memory(pid: int) -> dict[str, float]:
    fields = status_fields(pid)
    return {key: int(fields.get(key, "0 kB").split()[0]) / 1024 for key in ("VmRSS", "RssAnon", "RssFile", "VmHWM")}


def run_calls(base_url: str, pid: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    draw = random.Random(args.seed)
    files = sources()
    rows = []
    with httpx.Client(base_url=base_url, timeout=args.timeout) as client:
        model = args.model or client.get("/v1/models").json()["data"][0]["id"]
        rows.append({"call": 0, "prompt": 0, "output": 0, "seconds": 0.0, **memory(pid)})
        for call in range(1, args.calls + 1):
            messages = prompt(files, draw.randint(args.min_tokens, args.max_tokens), draw)
            started = time.monotonic()
            response = client.post("/v1/chat/completions", json={
                "model": model, "messages": messages, "max_tokens": args.max_output, "temperature": 0})
            response.raise_for_status()
            usage = response.json().get("usage") or {}
            rows.append({"call": call, "prompt": usage.get("prompt_tokens", 0),
                         "output": usage.get("completion_tokens", 0), "seconds": time.monotonic() - started,
                         **memory(pid)})
            row = rows[-1]
            print(f"  call {call:3}: {row['prompt']:5} prompt tokens, {row['seconds']:6.1f} s, RSS "
                  f"{row['VmRSS']:7.0f} MB, anon {row['RssAnon']:7.0f} MB", flush=True)
    return rows


def report(rows: list[dict[str, Any]], label: str) -> None:
    print(f"\n{label}\n call  prompt  output  seconds    RSS MB   anon MB   file MB    HWM MB  longest prompt")
    longest = 0
    for row in rows:
        longest = max(longest, row["prompt"])
        print(f"{row['call']:5} {row['prompt']:7} {row['output']:7} {row['seconds']:8.1f} {row['VmRSS']:9.0f} "
              f"{row['RssAnon']:9.0f} {row['RssFile']:9.0f} {row['VmHWM']:9.0f} {longest:15}")
    calls = [row["call"] for row in rows[1:]]
    anon = tail_slope(calls, [row["RssAnon"] for row in rows[1:]])
    rss = tail_slope(calls, [row["VmRSS"] for row in rows[1:]])
    first, last = rows[1] if len(rows) > 1 else rows[0], rows[-1]
    print(f"slope over the last two thirds: RssAnon {anon:+.2f} MB per call, VmRSS {rss:+.2f} MB per call; "
          f"anon {first['RssAnon']:.0f} → {last['RssAnon']:.0f} MB from call 1 to {last['call']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--base-url", help="a running server (with --pid); else one is started")
    parser.add_argument("--pid", type=int, help="the running server's process id")
    parser.add_argument("--model", help="the model name to ask for (default: the first of /v1/models)")
    parser.add_argument("--model-path", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--context-tokens", type=int, default=DEFAULT_CONTEXT_TOKENS)
    parser.add_argument("--server-arg", action="append", default=[], help="an option of the server started here")
    parser.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable of the server started here (e.g. MALLOC_ARENA_MAX=2)")
    parser.add_argument("--stand-in", action="store_true", help="the tests' scripted LLM server instead of a model")
    parser.add_argument("--min-tokens", type=int, default=2000)
    parser.add_argument("--max-tokens", type=int, default=6000)
    parser.add_argument("--max-output", type=int, default=128)
    parser.add_argument("--timeout", type=float, default=900.0, help="s one call may take")
    parser.add_argument("--seed", type=int, default=33)
    args = parser.parse_args()
    if args.base_url:
        if args.pid is None:
            parser.error("--base-url needs --pid (the process to sample)")
        rows = run_calls(args.base_url.removesuffix("/").removesuffix("/v1"), args.pid, args)
        report(rows, f"server at {args.base_url}, pid {args.pid}")
    elif args.stand_in:
        with subprocess.Popen([sys.executable, "-c", STAND_IN], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) as child:
            assert child.stdout is not None and child.stdin is not None
            url = child.stdout.readline().strip()
            try:
                rows = run_calls(url, child.pid, args)
            finally:
                child.stdin.close()
        report(rows, f"stand-in: the tests' scripted LLM server at {url} (not a model)")
    else:
        work = Path(tempfile.mkdtemp(prefix="jervis-model-memory-"))
        env = dict(item.split("=", 1) for item in args.server_env)
        model = TunedModel(args.model_path, extra=args.server_arg, work_dir=work, context_tokens=args.context_tokens,
                           env=env)
        base = model.start(timeout=300).removesuffix("/v1")
        try:
            assert model.pid is not None
            rows = run_calls(base, model.pid, args)
        finally:
            model.stop()
        report(rows, f"embedded model {args.model_path.name}, n_ctx {args.context_tokens}, options "
                     f"{' '.join(args.server_arg) or '(defaults)'}, environment {env or '(ours)'}; "
                     f"server log {model.log_file}")


if __name__ == "__main__":
    main()
