"""Soak: many runs end to end through one pod, sampling what could grow. Prints a table and a
verdict per series; asserts nothing.

    .venv/bin/python -m bench.soak [--runs 300] [--every 25] [--kinds advice,code,approval] [--hub-threads 100]
                                   [--retention-seconds 30]

One pod (bench/pod.py: a plain `python -m uvicorn` process, nx-27017, the scripted LLM answering
at once, the scripted agent, one slot). Runs go one after another, cycling through `--kinds`
(an `approval` run is approved). After each run its SSE stream is read once (its size is what
the pod holds for it). Every `--every` runs, and after the last, it samples:
  * the service process (/proc): resident memory (VmRSS) and its anonymous part (RssAnon: heap
    and stacks, what a leak grows), open descriptors, threads, child processes and zombies;
  * MongoDB connections: the service's ESTABLISHED sockets to nx-27017's port (/proc), and
    nx-27017's own count (serverStatus connections.current, the benchmark's clients included);
  * `/metrics`: jervis_orchestrations_active, jervis_outbox_depth (pending pushes, MongoDB) and
    jervis_outbox_unwritten (pushes held in memory);
  * the outbox collection (every document: pending ones and the delivered tombstones kept until
    `purge_at`), the run records and checkpoints (kept by design; TTL);
  * event logs the pod holds (`/stream/{id}` answers 200, not 404) and their bytes: /metrics has
    no gauge of the event hub (app/runs/events.py EventHub.bytes), so it is read this way. The pod
    keeps the logs of its last `STREAM_HUB_THREADS` threads (500 in production); the soak sets
    100 (`--hub-threads`), so that its runs pass the bound and show the plateau;
  * nx-27017's resident memory (the stand-in's, not the service's);
  * checkpoints: nx-27017 answers every filtered query by scanning the whole collection (its
    array-matching clause keeps SQLite off its indexes), so a run's cost grows with the
    checkpoints kept; MongoDB's indexes do not. The pod deletes those of runs ended more than
    `--retention-seconds` ago (CHECKPOINT_RETENTION_DAYS, 30 days in production; swept every 10 s
    here): 0 keeps them all, to see that growth;
  * per run since the previous sample: the mean wall time from dispatch to the terminal push, and
    the CPU the service and nx-27017 spent (a run that gets slower as runs accumulate shows here).
The verdict is the least-squares slope over the last two thirds of the samples, per 100 runs.
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import time
from dataclasses import dataclass

import httpx

from app.persistence.outbox import COLLECTION_NAME as OUTBOX
from app.persistence.runs import COLLECTION_NAME as RUNS
from bench.measure import children, cpu_seconds, established_to, sample_process, tail_slope
from bench.pod import KINDS, Pod, drive_run, pod, read_metrics


@dataclass(frozen=True)
class Series:
    key: str
    label: str
    threshold: float
    """growth per 100 runs up to which the series counts as flat"""
    expected: str = ""
    """why it grows by design, if it does"""


SERIES = (
    Series("rss_kb", "RSS KB", 1024),
    Series("anon_kb", "anon KB", 1024),
    Series("fds", "fds", 0.5),
    Series("threads", "threads", 0.5),
    Series("children", "children", 0.5),
    Series("zombies", "zombies", 0.5),
    Series("mongo_sockets", "mongo conns", 0.5),
    Series("mongo_current", "nx conns", 0.5),
    Series("active", "active", 0.5),
    Series("outbox_depth", "outbox pending", 0.5),
    Series("outbox_unwritten", "outbox mem", 0.5),
    Series("outbox_docs", "outbox docs", 0.5,
           "delivered status pushes stay as tombstones until purge_at (OUTBOX_STATUS_EXPIRY_SECONDS + retention)"),
    Series("records", "run records", 0.5, "one per run (kept)"),
    Series("checkpoints", "checkpoints", 0.5, "kept: --retention-seconds 0"),
    Series("streams_held", "streams held", 0.5, "EventHub keeps the logs of the last STREAM_HUB_THREADS threads"),
    Series("stream_kb", "stream KB", 1, "bytes of the held logs (bounded by STREAM_HUB_BYTES)"),
    Series("mongo_rss_kb", "nx RSS KB", 1024, "nx-27017 is the development stand-in, not the service"),
    Series("run_ms", "run ms", 10),
    Series("service_cpu_ms", "service CPU ms", 10),
    Series("mongo_cpu_ms", "nx CPU ms", 10),
)


class StreamSizes:
    """Bytes of each ended run's SSE stream, read once; which of them the pod still holds."""

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}

    def read(self, client: httpx.Client, thread_id: str) -> None:
        with client.stream("GET", f"/stream/{thread_id}") as response:
            self.sizes[thread_id] = len(response.read()) if response.status_code == 200 else 0

    def held(self, client: httpx.Client) -> tuple[int, int]:
        count = size = 0
        for thread_id, bytes_ in self.sizes.items():
            with client.stream("GET", f"/stream/{thread_id}") as response:
                if response.status_code == 200:
                    count, size = count + 1, size + bytes_
        return count, size


def sample(service: Pod, client: httpx.Client, streams: StreamSizes) -> dict[str, float]:
    proc = sample_process(service.pid)
    kids = children(service.pid)
    metrics = read_metrics(client)
    held, held_bytes = streams.held(client)
    with service.store() as store:
        status = store.admin.command("serverStatus")
        db, checkpoints = store[service.database], store[service.checkpoint_database]
        outbox_docs = db[OUTBOX].count_documents({})
        records = db[RUNS].count_documents({})
        checkpoint_docs = checkpoints["checkpoints"].count_documents({})
    mongo = sample_process(service.mongo_pid) if service.mongo_pid else None
    return {
        "rss_kb": proc.rss_kb, "anon_kb": proc.anon_kb, "fds": proc.fds, "threads": proc.threads,
        "children": len(kids), "zombies": sum(1 for _, state in kids if state == "Z"),
        "mongo_sockets": established_to(service.pid, service.mongo_port),
        "mongo_current": status.get("connections", {}).get("current", -1),
        "active": metrics.get("jervis_orchestrations_active", -1),
        "outbox_depth": metrics.get("jervis_outbox_depth", -1),
        "outbox_unwritten": metrics.get("jervis_outbox_unwritten", -1),
        "outbox_docs": outbox_docs, "records": records, "checkpoints": checkpoint_docs,
        "streams_held": held, "stream_kb": held_bytes / 1024, "mongo_rss_kb": mongo.rss_kb if mongo else -1,
    }


def verdicts(runs: list[int], samples: list[dict[str, float]]) -> list[str]:
    lines = []
    for series in SERIES:
        points = [(r, s[series.key]) for r, s in zip(runs, samples, strict=True) if not math.isnan(s[series.key])]
        per_100 = tail_slope([r for r, _ in points], [v for _, v in points]) * 100
        if abs(per_100) <= series.threshold:
            verdict = "flat"
        elif per_100 < 0:
            verdict = "shrinks"
        else:
            verdict = "GROWS" if not series.expected else "grows, by design: " + series.expected
        lines.append(f"  {series.label:15} {per_100:+12.1f} per 100 runs  {verdict}")
    rss = tail_slope(runs, [s["anon_kb"] for s in samples]) * 100
    streams = tail_slope(runs, [s["stream_kb"] for s in samples]) * 100
    lines.append(f"  anon KB not explained by held streams: {rss - streams:+.1f} KB per 100 runs "
                 f"(the held events cost more than their wire bytes in memory: Python objects)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--every", type=int, default=25, help="sample every N runs")
    parser.add_argument("--kinds", default="advice,code,approval", help=f"run kinds to cycle through, of {KINDS}")
    parser.add_argument("--warmup-runs", type=int, default=3)
    parser.add_argument("--retention-seconds", type=float, default=30.0,
                        help="CHECKPOINT_RETENTION_DAYS of the pod, in seconds (0: checkpoints kept forever)")
    parser.add_argument("--hub-threads", type=int, default=100,
                        help="STREAM_HUB_THREADS of the pod: fewer than --runs, so the bound is reached")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    load = os.getloadavg()[0]
    started = time.monotonic()
    outcomes: collections.Counter[str] = collections.Counter()
    points: list[int] = []
    samples: list[dict[str, float]] = []
    streams = StreamSizes()
    window: list[float] = []
    cpu_before = (0.0, 0.0)
    retention = {"checkpoint_retention_days": args.retention_seconds / 86400, "checkpoint_retention_sweep_seconds": 10}
    with (pod(max_concurrent_orchestrations=1, stream_hub_threads=args.hub_threads, **retention) as service,
          httpx.Client(base_url=service.url, timeout=60) as client):
        for i in range(args.warmup_runs):
            drive_run(client, service.kotlin, kinds[i % len(kinds)], service.data_root)
        for done in range(args.runs + 1):
            if done % args.every == 0 or done == args.runs:
                points.append(done)
                cpu_now = (cpu_seconds(service.pid), cpu_seconds(service.mongo_pid) if service.mongo_pid else 0.0)
                per_run = {"run_ms": 1000 * sum(window) / len(window) if window else float("nan"),
                           "service_cpu_ms": 1000 * (cpu_now[0] - cpu_before[0]) / len(window) if window else 0.0,
                           "mongo_cpu_ms": 1000 * (cpu_now[1] - cpu_before[1]) / len(window) if window else 0.0}
                samples.append(sample(service, client, streams) | per_run)
                window, cpu_before = [], (cpu_seconds(service.pid),
                                          cpu_seconds(service.mongo_pid) if service.mongo_pid else 0.0)
                print(f"  sampled after {done} runs ({time.monotonic() - started:.0f} s)", flush=True)
            if done == args.runs:
                break
            result = drive_run(client, service.kotlin, kinds[done % len(kinds)], service.data_root)
            outcomes[f"{result.kind} {result.status}"] += 1
            window.append(result.seconds)
            if result.thread_id:
                streams.read(client, result.thread_id)
    print(f"\nsoak: {args.runs} runs after {args.warmup_runs} warm-up runs, kinds {kinds}, "
          f"checkpoints kept {args.retention_seconds:g} s after a run ends (0: forever), "
          f"{time.monotonic() - started:.0f} s; outcomes {dict(outcomes)}; load average {load:.2f} at the start")
    print(f"{'after runs':15}" + "".join(f"{done:>9}" for done in points))
    for series in SERIES:
        print(f"{series.label:15}" + "".join(f"{values[series.key]:9.0f}" for values in samples))
    print("\nslope over the last two thirds of the samples:")
    print("\n".join(verdicts(points, samples)))


if __name__ == "__main__":
    main()
