"""How intake classifies on the embedded model: category, action, refs and wall time per request.

    .venv/bin/python -m bench.intake                    # starts the embedded model (./scripts/run.sh installs it)
    .venv/bin/python -m bench.intake --api-base http://127.0.0.1:8081/v1 --model openai/qwen2.5-coder-1.5b

Runs exactly what the intake node runs (`app/graph/rules/classification.py`: few-shot prompt, JSON
schema grammar, one repair round, deterministic rules) and prints who decided each answer: the
model, the rule that overrules "advice" for an imperative code request, or the fallback.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.config import Settings
from app.dev.embedded_model import EmbeddedModel
from app.dev.model_cache import DEFAULT_CACHE_DIR
from app.dev.model_download import cached_model
from app.dev.server_build import server_program
from app.graph.rules.classification import RULE, classify
from app.llm.provider import LitellmProvider
from app.texts.language import detect_language

REQUESTS = (
    "Add a subtract(a, b) function to calc.py",
    "Add a subtract(a, b) function to calc.py that returns a - b",
    "Fix the divide function in calc.py so it raises ValueError on division by zero",
    "Přidej do calc.py funkci multiply(a, b), která vrátí součin",
    "What does the calc module do?",
    "Jak funguje funkce add v calc.py?",
)


async def measure(settings: Settings, requests: tuple[str, ...]) -> None:
    llm = LitellmProvider(settings)
    print(f"{'request':<82} {'lang':<4} {'category/action':<20} {'refs':<6} {'decided by':<14} seconds")
    for query in requests:
        language = detect_language(query, default="cs")
        started = time.monotonic()
        result, warnings = await classify(llm, query=query, context="Client: demo; project: calc",
                                          recent="", clarification=None, language=language, workspace=True)
        seconds = time.monotonic() - started
        decided = "fallback" if warnings else ("rule" if result.reasoning.startswith(RULE) else "model")
        print(f"{query[:80]:<82} {language:<4} {f'{result.task_category}/{result.task_action}':<20} "
              f"{len(result.external_refs):<6} {decided:<14} {seconds:6.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--api-base",
                        help="an OpenAI-compatible server already running (default: start the embedded model)")
    parser.add_argument("--model", default="openai/qwen2.5-coder-1.5b", help="litellm model string with --api-base")
    parser.add_argument("requests", nargs="*", help="requests to classify (default: a fixed set in both languages)")
    args = parser.parse_args()
    model: EmbeddedModel | None = None
    api_base, name, context = args.api_base, args.model, None
    if api_base is None:
        path = cached_model(DEFAULT_CACHE_DIR)
        if path is None:
            raise SystemExit("the embedded model is not installed: run ./scripts/run.sh once (or pass --api-base)")
        model = EmbeddedModel(path, work_dir=Path(tempfile.mkdtemp(prefix="bench-intake-")),
                              program=server_program())  # as the launcher: llama-server where it is built
        started = time.monotonic()
        api_base, name, context = model.start(), model.litellm_model, model.context_tokens
        print(f"embedded model started in {time.monotonic() - started:.1f} s ({api_base})")
    try:
        settings = Settings(local_llm_api_base=api_base, local_llm_model=name, local_context_tokens=context,
                            heartbeat_dead_seconds=300)
        asyncio.run(measure(settings, tuple(args.requests) or REQUESTS))
    finally:
        if model is not None:
            model.stop()


if __name__ == "__main__":
    main()
