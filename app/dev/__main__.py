"""Run the service on embedded defaults: `python -m app.dev` (`python -m app.dev prepare` only
installs what the embedded model needs, so `scripts/run.sh` shows that before the service starts).

Without `MONGODB_URL`, nx-27017 (a MongoDB wire-protocol server on SQLite) is started on a free
loopback port with its data under `.data/mongo`, and stopped with the service. `DATA_ROOT`
defaults to `.data/workspaces`.

Without a reachable Ollama (`OLLAMA_URL` unset, or its `/api/tags` not answering within 1 s) and
without `LOCAL_LLM_API_BASE`, an embedded model (Qwen2.5-Coder-1.5B-Instruct on llama.cpp's
`llama-server`, several requests at once, or llama-cpp-python's server where llama-server cannot
be built; `app/dev/embedded_model.py`) is installed the first time (a 5-10 minute build and a
1.1 GB download, cached in `.cache/llm/`), started on a free loopback port and handed to the
service as `LOCAL_LLM_API_BASE` / `LOCAL_LLM_MODEL`. `JERVIS_EMBEDDED_LLM=0` turns this off;
`EMBEDDED_LLM_SLOTS` sets llama-server's slots, `EMBEDDED_LLM_THREADS` its generation threads.

Code steps run the local Aider (`LOCAL_AGENTS`), installed here the first time into
`.cache/agents/aider-venv` (1-3 minutes). Status pushes go to `KOTLIN_SERVER_URL`, by default
`http://127.0.0.1:5500`, where the terminal client (`scripts/jervis run`) listens. Everything else
comes from the environment as in production. It listens as `python -m app.serve` does: on loopback
(`HOST`, default 127.0.0.1) unless told otherwise, and beyond loopback only with `API_TOKEN` (or
`ALLOW_NO_TOKEN=true`); a launcher for one person's machine is not reachable from the network
unless told so.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from app.agents.local_agents import AgentInstallError, LocalAgents
from app.config import Settings
from app.dev.embedded_model import DEFAULT_SLOTS, MODEL_ALIAS, EmbeddedModel, embedded_llm_decision
from app.dev.embedded_mongo import EmbeddedMongo
from app.dev.model_cache import DEFAULT_CACHE_DIR, EmbeddedModelError
from app.dev.model_install import prepare
from app.runtime.listen import ListenRefusedError, check_listen
from app.serve import REFUSED, serve

#: Where the launcher says which embedded model runs where (`bench.versus_aider` reads it).
STATE_FILE = "embedded-llm.json"


def start_embedded_llm(work_dir: Path) -> EmbeddedModel | None:
    """Start the embedded model when no other LLM is configured and reachable; set the env."""
    wanted, why = embedded_llm_decision()
    if not wanted:
        print(f"LLM: {why}", flush=True)
        return None
    print(f"LLM: {why}; using the embedded model (JERVIS_EMBEDDED_LLM=0 turns it off)", flush=True)
    model_path, program = prepare(Path(sys.prefix), DEFAULT_CACHE_DIR)
    threads = os.environ.get("EMBEDDED_LLM_THREADS", "").strip()
    slots = os.environ.get("EMBEDDED_LLM_SLOTS", "").strip()
    model = EmbeddedModel(model_path, work_dir=work_dir, threads=int(threads) if threads.isdigit() else None,
                          program=program, slots=int(slots) if slots.isdigit() and int(slots) > 0 else DEFAULT_SLOTS)
    started = time.monotonic()
    os.environ["LOCAL_LLM_API_BASE"] = model.start()
    os.environ["LOCAL_LLM_MODEL"] = model.litellm_model
    os.environ.setdefault("LOCAL_CONTEXT_TOKENS", str(model.context_tokens))  # larger calls escalate
    print(f"embedded LLM {model.litellm_model} on {model.server_name} at {model.api_base} (started in "
          f"{time.monotonic() - started:.1f}s, log {model.log_file})", flush=True)
    speed = model.measure_speed()
    if speed is not None:  # a 1.5B model on 2 cores: about 7-20 tokens/s, so a 200-token plan is 10-30 s
        print(f"embedded LLM generates {speed:.1f} tokens/s on this machine", flush=True)
    (work_dir / STATE_FILE).write_text(json.dumps(model.state() | {"tokens_per_second": speed}))
    return model


def prepare_local_agents() -> None:
    """Install the local agent programs now (with their progress lines) rather than inside the
    first step, when the local runner will use them; a failure is reported and retried at the
    first step. The service's start-up log then says what runs each agent type."""
    settings = Settings()
    if settings.agent_runner != "local":
        return
    agents = LocalAgents(settings)
    for name in sorted({agents.program(agent_type) for agent_type in settings.agent_concurrency}):
        program = agents.programs.get(name)
        if program is None or program.installed():
            continue
        try:
            program.install(lambda line: print(line, flush=True))
        except AgentInstallError as exc:
            print(f"{name}: not installed ({exc}); code steps will try again", flush=True)


def run() -> int:
    """Start what the environment lacks, then the service (`app.serve`); its exit status.

    The listen check comes first: a launch that would open the service to the network without a
    token is refused before the embedded servers start or anything binds."""
    try:
        check_listen(Settings())
    except ListenRefusedError as exc:
        print(f"jervis: {exc}", file=sys.stderr, flush=True)
        return REFUSED
    # uvicorn re-raises SIGTERM after its graceful shutdown; with the default handler that would
    # kill this process before `finally` stops the embedded servers. Installed first, so a
    # SIGTERM during the first-run build also goes through `finally`.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    base = Path(os.environ.get("JERVIS_DEV_HOME", ".data")).resolve()
    os.environ.setdefault("DATA_ROOT", str(base / "workspaces"))
    Path(os.environ["DATA_ROOT"]).mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    embedded: EmbeddedMongo | None = None
    llm: EmbeddedModel | None = None
    try:
        try:
            llm = start_embedded_llm(base)
        except EmbeddedModelError as exc:
            sys.exit(f"embedded LLM failed: {exc}\nSet JERVIS_EMBEDDED_LLM=0 to start without an LLM.")
        if not os.environ.get("MONGODB_URL"):
            (base / "mongo").mkdir(parents=True, exist_ok=True)
            embedded = EmbeddedMongo(data_dir=base / "mongo", work_dir=base)
            os.environ["MONGODB_URL"] = embedded.start()
            print(f"embedded MongoDB (nx-27017) at {os.environ['MONGODB_URL']}, data in {base / 'mongo'}", flush=True)
        # Pushes go to the terminal client's receiver (`python -m app.cli run` listens here).
        os.environ.setdefault("KOTLIN_SERVER_URL", "http://127.0.0.1:5500")
        prepare_local_agents()
        return serve(Settings())
    finally:
        if embedded is not None:
            embedded.stop()
        if llm is not None:
            llm.stop()
            (base / STATE_FILE).unlink(missing_ok=True)


def prepare_embedded_llm() -> int:
    """Install the embedded model and its server now when the launcher will use them."""
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


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    if args == ["prepare"]:
        return prepare_embedded_llm()
    if args:
        print("usage: python -m app.dev [prepare]", file=sys.stderr)
        return 2
    return run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
