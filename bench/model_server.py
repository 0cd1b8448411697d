"""The embedded model's server programs side by side: generation speed of 1, 2 and 4 streamed
answers at once, first-token latency and resident memory. Prints min/median/max; asserts nothing.

    .venv/bin/python -m bench.model_server [--servers llama-server,llama-server+ngram,llama-cpp-python]
        [--concurrency 1,2,4] [--rounds 2] [--task rewrite|write] [--max-output 160] [--threads N]
        [--results bench/results/model_server.json]

Each server is started as the dev launcher starts it (`app/dev/embedded_model.py`: the cached
Qwen2.5-Coder-1.5B GGUF, the same generation and batch threads, 16k tokens of context per request):
`llama-server` is llama.cpp's own (`app/dev/server_build.py`; `--parallel` = the highest
concurrency, continuous batching) without speculative decoding, `llama-server+ngram` as the
launcher runs it, with n-gram drafts (`--spec-type ngram-simple`: tokens copied from earlier in
the prompt and answer, verified in one batch), `llama-cpp-python` the fallback (one request at a
time). Only one server runs at a
time; run it on an otherwise idle machine (`uptime`).

At each concurrency level, `--rounds` times, that many chat completions are sent at once, streamed,
temperature 0, each with its own prompt: `rewrite` (the default) gives a source file of this
repository (~300-900 tokens) and asks for it back whole with a docstring added, as Aider's
whole-file edits do; `write` asks for a new function. Per stream: seconds to the first token,
streamed tokens (content chunks; each server sends one token per chunk) and their rate after the
first. Per level: the aggregate rate (all streams' tokens over the wall time of the round, prompts
included) and VmRSS/VmHWM of the server process. The result file keeps every stream.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from app.dev.embedded_model import DEFAULT_CONTEXT_TOKENS, DRAFT, EmbeddedModel, default_threads
from app.dev.server_build import server_program
from bench.measure import status_fields
from bench.model_memory import DEFAULT_MODEL

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "model_server.json"
#: Each server: llama-server's draft type (None: none; llama-cpp-python has none).
SERVERS: dict[str, str | None] = {"llama-server": None, "llama-server+ngram": DRAFT, "llama-cpp-python": None}
SYSTEM = "You are an expert Python programmer. Answer with code only, in one ```python block."
FUNCTIONS = ("parses an ISO 8601 duration into seconds", "merges overlapping integer intervals",
             "renders a table of dictionaries as Markdown", "finds the longest common prefix of strings",
             "validates an IBAN", "converts a Roman numeral to an integer", "wraps text at a given width",
             "computes the edit distance of two strings", "groups anagrams in a list of words",
             "topologically sorts a dependency mapping")


def source_files() -> list[Path]:
    """Modules of this repository of a size a whole-file edit sends (1-3 KB)."""
    return [p for p in sorted((ROOT / "app").rglob("*.py")) if 1000 <= p.stat().st_size <= 3000]


def prompts(task: str, count: int, draw: random.Random) -> list[list[dict[str, str]]]:
    """`count` distinct conversations for one round."""
    if task == "write":
        return [[{"role": "system", "content": SYSTEM},
                 {"role": "user", "content": f"Write a Python function that {f}, with a docstring and type hints."}]
                for f in draw.sample(FUNCTIONS, count)]
    files = draw.sample(source_files(), count)
    return [[{"role": "system", "content": SYSTEM},
             {"role": "user", "content": f"Here is {p.relative_to(ROOT)}:\n```python\n{p.read_text()}```\n"
                                         "Return the whole file, unchanged except for a one-line docstring "
                                         "added to the first function that has none."}]
            for p in files]


def stream_one(base: str, model: str, messages: list[dict[str, str]], max_output: int,
               start: threading.Barrier, out: dict[str, Any]) -> None:
    body = {"model": model, "messages": messages, "max_tokens": max_output, "temperature": 0, "stream": True}
    start.wait()
    sent = time.monotonic()
    first = last = None
    tokens = 0
    with httpx.Client(timeout=900) as client, client.stream("POST", f"{base}/chat/completions", json=body) as reply:
        reply.raise_for_status()
        for line in reply.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choices = json.loads(line[6:]).get("choices") or [{}]
            if (choices[0].get("delta") or {}).get("content"):
                tokens += 1
                last = time.monotonic()
                first = first or last
    out.update(sent=sent, first=first, last=last, tokens=tokens)


def one_round(base: str, model: str, conversations: Sequence[list[dict[str, str]]],
              max_output: int) -> tuple[list[dict[str, Any]], float]:
    """Every conversation streamed at once; (per-stream results, wall seconds)."""
    barrier = threading.Barrier(len(conversations))
    results: list[dict[str, Any]] = [{} for _ in conversations]
    threads = [threading.Thread(target=stream_one, args=(base, model, c, max_output, barrier, r))
               for c, r in zip(conversations, results, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    started = min(r["sent"] for r in results)
    ended = max(r["last"] or r["sent"] for r in results)
    for r in results:
        r["first_token_s"] = (r["first"] or r["sent"]) - r["sent"]
        span = (r["last"] or 0) - (r["first"] or 0)
        r["tokens_per_s"] = (r["tokens"] - 1) / span if r["tokens"] > 1 and span > 0 else 0.0
    return results, ended - started


def memory_mb(pid: int) -> dict[str, float]:
    fields = status_fields(pid)
    return {key: int(fields.get(key, "0 kB").split()[0]) / 1024 for key in ("VmRSS", "VmHWM")}


def spread(values: Sequence[float]) -> str:
    return f"{min(values):6.1f} {statistics.median(values):6.1f} {max(values):6.1f}"


def bench_server(name: str, model: EmbeddedModel, args: argparse.Namespace) -> list[dict[str, Any]]:
    started = time.monotonic()
    base = model.start(timeout=300)
    print(f"\n{name}: {model.server_name}, threads {model.threads}/{model.batch_threads}, "
          f"started in {time.monotonic() - started:.1f}s (log {model.log_file})", flush=True)
    assert model.pid is not None
    draw = random.Random(args.seed)
    one_round(base, model.alias, prompts(args.task, 1, random.Random(0)), 16)  # weights loaded and warm
    levels = []
    for concurrency in args.concurrency:
        streams: list[dict[str, Any]] = []
        aggregate = []
        for _ in range(args.rounds):
            results, wall = one_round(base, model.alias, prompts(args.task, concurrency, draw), args.max_output)
            streams += results
            aggregate.append(sum(r["tokens"] for r in results) / wall)
        level = {"server": name, "concurrency": concurrency, "aggregate_tokens_per_s": aggregate,
                 "streams": [{k: round(r[k], 3) for k in ("first_token_s", "tokens", "tokens_per_s")}
                             for r in streams], **memory_mb(model.pid)}
        levels.append(level)
        print(f"  {concurrency} at once: aggregate tok/s {spread(aggregate)} | per stream tok/s "
              f"{spread([r['tokens_per_s'] for r in streams])} | first token s "
              f"{spread([r['first_token_s'] for r in streams])} | RSS {level['VmRSS']:.0f} MB, "
              f"peak {level['VmHWM']:.0f} MB", flush=True)
    return levels


def report(levels: list[dict[str, Any]]) -> None:
    print("\nmin / median / max over rounds (aggregate) and streams (the rest)")
    print(f"{'server':20} {'at once':>7}  {'aggregate tok/s':>20}  {'per-stream tok/s':>20}  "
          f"{'first token s':>20}  {'RSS MB':>7} {'peak MB':>7}")
    for level in levels:
        streams = level["streams"]
        print(f"{level['server']:20} {level['concurrency']:7}  {spread(level['aggregate_tokens_per_s']):>20}  "
              f"{spread([s['tokens_per_s'] for s in streams]):>20}  {spread([s['first_token_s'] for s in streams]):>20}"
              f"  {level['VmRSS']:7.0f} {level['VmHWM']:7.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default=",".join(SERVERS), help=f"comma-separated, of {', '.join(SERVERS)}")
    parser.add_argument("--concurrency", default="1,2,4", help="streams at once, comma-separated")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--task", choices=("rewrite", "write"), default="rewrite")
    parser.add_argument("--max-output", type=int, default=160)
    parser.add_argument("--threads", type=int, default=None, help=f"generation threads (default {default_threads()})")
    parser.add_argument("--model-path", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--program", type=Path, default=None, help="llama-server (default: the built one)")
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSON file written (appended to)")
    args = parser.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    program = args.program or server_program()
    levels: list[dict[str, Any]] = []
    for name in args.servers.split(","):
        if name.startswith("llama-server") and program is None:
            print(f"{name}: not built (python -m app.dev prepare builds it); skipped")
            continue
        work = Path(tempfile.mkdtemp(prefix="jervis-model-server-"))
        model = EmbeddedModel(args.model_path, work_dir=work, threads=args.threads,
                              context_tokens=DEFAULT_CONTEXT_TOKENS, slots=max(args.concurrency), draft=SERVERS[name],
                              program=program if name.startswith("llama-server") else None)
        try:
            levels += bench_server(name, model, args)
        finally:
            model.stop()
    report(levels)
    runs = json.loads(args.results.read_text()) if args.results.is_file() else []
    runs.append({"when": datetime.now(UTC).isoformat(timespec="seconds"), "cores": os.cpu_count(),
                 "machine": platform.processor() or platform.machine(), "load_before": os.getloadavg()[0],
                 "model": args.model_path.name, "task": args.task, "max_output": args.max_output,
                 "rounds": args.rounds, "threads": args.threads or default_threads(), "levels": levels})
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(runs, indent=1) + "\n")
    print(f"\nwritten to {args.results}")


if __name__ == "__main__":
    main()
