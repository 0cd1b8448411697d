"""MongoDB commands of one advice run, the service beside the raw chain: prints figures, asserts nothing.

    .venv/bin/python -m bench.commands [--runs 10] [--timeline]

On one nx-27017 with the instant scripted LLM of bench.orchestration, runs the service (its own
process, its commands recorded by `bench/command_log.py` installed through `sitecustomize`) and
the raw 4-node chain (this process) in turns, half a second apart so that no run's deferred work
(the outbox's delayed deletes) falls into the next. Prints, per collection, the commands and
documents of one run and their summed duration as the client saw it (waiting for nx-27017, which
answers one command at a time, included): for the service the commands it sent between dispatch
and Kotlin's receipt of `done`, for the raw chain those of one invocation. `--timeline` prints the
last service run command by command, with the pushes Kotlin received and the LLM requests.

Why: the per-node ratio of bench.orchestration is bounded below by these counts; nx-27017 costs
1-5 ms a command however small, so the service's extra commands (lock, run record, one outbox
write per node, outcome, slot release, status) set a floor no CPU saving removes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

os.environ["JERVIS_TEST_PREWARM"] = "0"  # a forked service would not run sitecustomize

import httpx
from pymongo import monitoring

from bench import command_log
from bench.command_log import Command
from bench.loopback import loopback
from bench.orchestration import RawChain, ServiceRun, script_instant_advice, service_run
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.llm_server import ScriptedLlmServer
from tests.fixtures.service import ROOT, ServiceProcess, service_env

GAP_SECONDS = 0.5

#: Per collection: (commands, documents, ms) of one run.
Figures = dict[str, tuple[int, int, float]]


def per_collection(commands: Iterable[Command]) -> Figures:
    found: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0])
    for command in commands:
        row = found[command.collection or command.name]
        row[0] += 1
        row[1] += command.documents
        row[2] += command.ms
    return {name: (int(row[0]), int(row[1]), row[2]) for name, row in found.items()}


def within(commands: list[Command], start: float, end: float) -> list[Command]:
    return [c for c in commands if start <= c.started <= end]


def median_figures(runs: list[Figures]) -> Figures:
    names = sorted({name for run in runs for name in run})
    return {name: (round(statistics.median(run.get(name, (0, 0, 0.0))[0] for run in runs)),
                   round(statistics.median(run.get(name, (0, 0, 0.0))[1] for run in runs)),
                   statistics.median(run.get(name, (0, 0, 0.0))[2] for run in runs)) for name in names}


def print_table(service: Figures, raw: Figures) -> None:
    print(f"{'collection':24} {'service: commands':>17} {'documents':>9} {'ms':>7}   "
          f"{'raw: commands':>13} {'documents':>9} {'ms':>7}")
    for name in sorted(set(service) | set(raw)):
        s, r = service.get(name, (0, 0, 0.0)), raw.get(name, (0, 0, 0.0))
        print(f"{name:24} {s[0]:17d} {s[1]:9d} {s[2]:7.1f}   {r[0]:13d} {r[1]:9d} {r[2]:7.1f}")
    total_s = [sum(v[i] for v in service.values()) for i in range(3)]
    total_r = [sum(v[i] for v in raw.values()) for i in range(3)]
    print(f"{'total':24} {int(total_s[0]):17d} {int(total_s[1]):9d} {total_s[2]:7.1f}   "
          f"{int(total_r[0]):13d} {int(total_r[1]):9d} {total_r[2]:7.1f}")


def print_timeline(run: ServiceRun, commands: list[Command], kotlin: FakeKotlinServer,
                   llm: ScriptedLlmServer) -> None:
    lines = [(run.sent, "POST /orchestrate/stream sent")]
    lines += [(run.sent + run.dispatch / 1000, "POST /orchestrate/stream answered")]
    lines += [(e.received_at_wall, f"Kotlin received {e.route.rsplit('/', 1)[-1]} "
                                   f"{e.body.get('node') or e.body.get('status')}")
              for e in kotlin.events if run.sent <= e.received_at_wall <= run.done]
    lines += [(r.received_at, f"LLM server received {r.path}") for r in llm.requests
              if run.sent <= r.received_at <= run.done]
    lines += [(c.started, f"mongo {c.name:13} {c.collection:22} documents {c.documents:2d}  {c.ms:6.2f} ms")
              for c in within(commands, run.sent, run.done)]
    for at, what in sorted(lines):
        print(f"{(at - run.sent) * 1000:8.2f} ms  {what}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--timeline", action="store_true", help="print the last service run command by command")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="jervis-commands-"))
    site = work / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(command_log.SITECUSTOMIZE)
    service_file, raw_file = work / "service.tsv", work / "raw.tsv"
    monitoring.register(command_log.CommandLog(raw_file))  # this process: the raw chain's client only
    with loopback(work) as stack:
        mongo, llm, kotlin, kb = stack.mongo, stack.llm, stack.kotlin, stack.kb
        script_instant_advice(llm)
        (work / "data").mkdir()
        env = service_env(mongo_url=mongo.url, llm_url=llm.url, kotlin_url=kotlin.url, kb_url=kb.url,
                          data_root=work / "data")
        env |= {command_log.ENV: str(service_file),
                "PYTHONPATH": os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")])}
        raw = RawChain(mongo.url)
        service = ServiceProcess(env=env, log_path=work / "service.log").start()
        service_runs: list[ServiceRun] = []
        raw_windows: list[tuple[float, float]] = []
        try:
            with httpx.Client(base_url=service.url, timeout=30) as client:
                raw.run()
                service_run(client, kotlin)  # warm-up: first litellm call, first collection access
                for _ in range(args.runs):
                    time.sleep(GAP_SECONDS)
                    service_runs.append(service_run(client, kotlin))
                    time.sleep(GAP_SECONDS)
                    began = time.time()
                    raw.run()
                    raw_windows.append((began, time.time()))
            time.sleep(GAP_SECONDS)
        finally:
            service.stop()
            raw.close()
        service_commands, raw_commands = command_log.read(service_file), command_log.read(raw_file)
        if not service_commands:
            sys.exit(f"no command recorded by the service: is {site} on its PYTHONPATH? ({work / 'service.log'})")
        print(f"MongoDB commands of one advice run (4 nodes, instant LLM), median of {args.runs} runs; "
              f"ms: summed as the client saw them (waiting included)")
        print("service: from dispatch until Kotlin received `done`; raw: one invocation of the 4-node chain")
        print_table(median_figures([per_collection(within(service_commands, r.sent, r.done)) for r in service_runs]),
                    median_figures([per_collection(within(raw_commands, *w)) for w in raw_windows]))
        if args.timeline:
            print("\nthe last service run:")
            print_timeline(service_runs[-1], service_commands, kotlin, llm)


if __name__ == "__main__":
    main()
