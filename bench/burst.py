"""A burst of dispatches at one slot: each answered 200 or 429 in time, none lost. Prints figures
and a verdict per check; asserts nothing.

    .venv/bin/python -m bench.burst [--size 100] [--rounds 1] [--kind advice] [--bound-ms 2000]

One pod (bench/pod.py, MAX_CONCURRENT_ORCHESTRATIONS=1, the scripted LLM answering at once).
Each round sends `--size` `POST /orchestrate/stream` at once from a process of its own
(bench/loadgen.py: asyncio + aiohttp, one connection each, opened before), then waits until every
accepted run has ended. The client's CPU is printed (its share of the latency on 2 cores). Checks:
  * every dispatch was answered 200 or 429, within `--bound-ms` (p50 / p99 / max printed);
  * none lost: every 200 ends with exactly one status push at Kotlin (a terminal one; waited for
    `--settle` s more so that a late duplicate would show), and its run record ended;
  * every 429 left nothing: no run record with its task id, no push of its task id.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from app.persistence.runs import COLLECTION_NAME as RUNS
from bench.measure import cpu_seconds, percentile
from bench.pod import KINDS, TERMINAL, Pod, drive_run, pod, run_body

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Answer:
    task_id: str
    status: int
    seconds: float
    thread_id: str = ""
    error: str = ""


def burst(url: str, bodies: list[dict[str, Any]], work: Path) -> tuple[list[Answer], float, float]:
    """(answers, client CPU seconds, seconds from the start to the last answer): the burst sent by
    a process of its own (bench/loadgen.py), so its CPU is not this process's fake servers'."""
    bodies_file = work / f"burst-{time.time_ns()}.json"
    bodies_file.write_text(json.dumps(bodies), encoding="utf-8")
    spec = json.dumps({"bodies_file": str(bodies_file)})
    done = subprocess.run([sys.executable, "-m", "bench.loadgen", "burst", url, spec], cwd=ROOT, check=True,
                          capture_output=True, text=True, timeout=300)
    reply = json.loads(done.stdout.splitlines()[-1])
    answers = [Answer(a["task_id"], a["status"], a["seconds"], a.get("thread_id", ""), a.get("error", ""))
               for a in reply["answers"]]
    return answers, reply["cpu_seconds"], reply["seconds"]


def check_round(service: Pod, answers: list[Answer], settle: float, timeout: float) -> dict[str, list[str]]:
    """Problems by check (an empty list passed)."""
    problems: dict[str, list[str]] = {"answered 200 or 429": [], "none lost": [], "429 left nothing": []}
    accepted = [a for a in answers if a.status == 200]
    problems["answered 200 or 429"] = [f"{a.task_id}: {a.status or a.error}" for a in answers
                                       if a.status not in (200, 429)]
    deadline = time.monotonic() + timeout
    for answer in accepted:
        seen = 0
        while True:
            push = service.kotlin.wait_status(answer.thread_id, seen, max(0.0, deadline - time.monotonic()))
            if push is None:
                problems["none lost"].append(f"{answer.thread_id}: no terminal status push")
                break
            seen += 1
            if push.body["status"] in TERMINAL:
                break
    time.sleep(settle)
    with service.store() as store:
        records = store[service.database][RUNS]
        for answer in accepted:
            pushes = [p.body["status"] for p in service.kotlin.statuses_of.get(answer.thread_id, [])]
            if len(pushes) != 1 or pushes[0] not in TERMINAL:
                problems["none lost"].append(f"{answer.thread_id}: status pushes {pushes}")
            record = records.find_one({"_id": answer.thread_id}, {"status": 1})
            if record is None or record["status"] not in TERMINAL:
                problems["none lost"].append(f"{answer.thread_id}: run record {record}")
        for answer in answers:
            if answer.status != 429:
                continue
            if (count := records.count_documents({"task_id": answer.task_id})) != 0:
                problems["429 left nothing"].append(f"{answer.task_id}: {count} run record(s)")
            if pushed := [e.route for e in service.kotlin.events if isinstance(e.body, dict)
                          and e.body.get("taskId") == answer.task_id]:
                problems["429 left nothing"].append(f"{answer.task_id}: pushes {pushed}")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--kind", choices=KINDS, default="advice")
    parser.add_argument("--bound-ms", type=float, default=2000.0, help="the longest acceptable answer")
    parser.add_argument("--settle", type=float, default=3.0, help="s to wait for late duplicate pushes")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with pod(max_concurrent_orchestrations=1) as service, httpx.Client(base_url=service.url, timeout=60) as client:
        drive_run(client, service.kotlin, args.kind, service.data_root)  # warm-up: first LLM call, collections
        print(f"burst of {args.size} `{args.kind}` dispatches at one slot, {args.rounds} round(s); "
              f"load average {load:.2f} at the start, {os.cpu_count()} cores")
        failed = False
        for round_ in range(1, args.rounds + 1):
            bodies = [run_body(args.kind, service.data_root) for _ in range(args.size)]
            pids = {"service": service.pid, "nx-27017": service.mongo_pid or 0, "bench (fakes)": os.getpid()}
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            answers, client_cpu, wall = burst(service.url, bodies, service.work)
            # The service's, nx-27017's and this process's include the client's start-up and connections.
            cpu = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()} | {"client": client_cpu}
            codes = collections.Counter(a.status or a.error for a in answers)
            print(f"\nround {round_}: answers {dict(codes)}, the last {wall * 1000:.0f} ms after the start; "
                  "CPU seconds in the round: " + ", ".join(f"{name} {value:.2f}" for name, value in cpu.items()))
            for code in (200, 429):
                seconds = [a.seconds for a in answers if a.status == code]
                if seconds:
                    print(f"  {code}: n {len(seconds):3}  p50 {percentile(seconds, .5) * 1000:7.1f} ms  "
                          f"p99 {percentile(seconds, .99) * 1000:7.1f} ms  max {max(seconds) * 1000:7.1f} ms")
            slowest = max(a.seconds for a in answers) * 1000
            problems = check_round(service, answers, args.settle, timeout=120)
            problems["answered within the bound"] = [f"max {slowest:.0f} ms"] if slowest > args.bound_ms else []
            for check, found in problems.items():
                failed = failed or bool(found)
                print(f"  {check:28} {'ok' if not found else f'FAILED ({len(found)}): ' + '; '.join(found[:5])}")
        print(f"\nverdict: {'every check passed' if not failed else 'some check FAILED (see above)'}")


if __name__ == "__main__":
    main()
