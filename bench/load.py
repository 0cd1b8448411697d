"""Load on one service pod: `/status` pollers, SSE subscribers and console pages while runs go
through one after another. Prints figures, asserts nothing.

    .venv/bin/python -m bench.load [--pollers 200] [--rate 1] [--sse 50] [--console 10] [--seconds 60]
                                   [--ramp 50,100,150,200,300,400] [--ramp-seconds 20] [--knee-p99 1.0]
                                   [--kinds advice,code,approval] [--poller-procs 1]

One pod (bench/pod.py: uvicorn on loopback, nx-27017, the scripted LLM answering at once, the
scripted agent, one slot: MAX_CONCURRENT_ORCHESTRATIONS=1). A dispatcher thread in this process
sends runs through it without pause, cycling through `--kinds` and approving the commit of an
`approval` run. The clients run as processes of their own (bench/loadgen.py: asyncio + aiohttp):
`--poller-procs` processes of `/status` pollers, one process of SSE subscribers and console
pages; their CPU and event-loop lag are printed beside their figures, so a client that could not
keep up shows as such. This process holds the fake Kotlin, LLM and KB servers and the dispatcher.

Phases: `steady` (`--pollers` pollers at `--rate` requests a second each, `--seconds` long), then
a ramp: the same pollers at the total rates of `--ramp` (requests a second), `--ramp-seconds`
each. For each phase: `/status` latency p50/p99/max, errors, offered and achieved rate; the
console's and the SSE figures; the runs that went through and the first progress push of each
(from the dispatch's 200 to the fake Kotlin server's receipt of the run's first progress push);
CPU per process. The knee: the last ramp step whose /status p99 stayed within `--knee-p99` s and
whose achieved rate kept within 10 % of the offered one.
Target (issue #33): /status p99 ≤ 100 ms with 200 pollers at 1 rps and 50 SSE subscribers, no errors.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import httpx

from bench.measure import CpuMeter, knee, percentile
from bench.pod import KINDS, Pod, RunResult, drive_run, first_push_ms, pod

ROOT = Path(__file__).resolve().parents[1]
#: Seconds the client processes get to start before the first phase.
LEAD_SECONDS = 4.0
#: Recent runs the pollers spread over (poller i polls the i-th newest).
POLLED_THREADS = 200


class LoadClients:
    """The client processes: started with the plan, told each new run, their figures read at the end."""

    def __init__(self, url: str, plan: dict[str, Any], *, pollers: int, procs: int, sse: int, console: int) -> None:
        self.procs: dict[str, subprocess.Popen[str]] = {}
        self.lines: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._readers: list[threading.Thread] = []
        share = [pollers // procs + (1 if i < pollers % procs else 0) for i in range(procs)]
        offset = 0
        for i, count in enumerate(share):
            self._spawn(f"pollers{i + 1}", "pollers", url, {**plan, "pollers": count, "offset": offset})
            offset += count
        self._spawn("clients", "clients", url, {**plan, "sse": sse, "console": console})

    def _spawn(self, name: str, role: str, url: str, spec: dict[str, Any]) -> None:
        proc = subprocess.Popen([sys.executable, "-m", "bench.loadgen", role, url, json.dumps(spec)], cwd=ROOT,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.procs[name] = proc
        self.lines[name] = []
        assert proc.stdout is not None
        reader = threading.Thread(target=self._read, args=(name, proc.stdout), daemon=True)
        reader.start()
        self._readers.append(reader)

    def _read(self, name: str, stream: IO[str]) -> None:
        for line in stream:
            self.lines[name].append(line)

    def pids(self) -> dict[str, int]:
        return {name: proc.pid for name, proc in self.procs.items()}

    def tell(self, recent: list[str], current: str) -> None:
        message = json.dumps({"threads": recent, "current": current}) + "\n"
        with self._lock:
            for proc in self.procs.values():
                if proc.stdin is not None and not self._closed:
                    with contextlib.suppress(OSError):
                        proc.stdin.write(message)
                        proc.stdin.flush()

    def results(self, timeout: float) -> dict[str, dict[str, dict[str, Any]]]:
        """{process: {phase: figures}} once every process ended."""
        with self._lock:
            self._closed = True
        for proc in self.procs.values():
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
        for reader in self._readers:
            reader.join(5)
        return {name: {(figures := json.loads(line))["phase"]: figures for line in lines}
                for name, lines in self.lines.items()}


class Dispatcher(threading.Thread):
    """Runs one after another through the pod until stopped; each new run is told to the clients."""

    def __init__(self, pod: Pod, kinds: list[str], clients: LoadClients | None) -> None:
        super().__init__(name="dispatcher", daemon=True)
        self.pod = pod
        self.kinds = kinds
        self.clients = clients
        self.results: list[RunResult] = []
        self.recent: collections.deque[str] = collections.deque(maxlen=POLLED_THREADS)
        self.stopping = threading.Event()

    def started(self, thread_id: str) -> None:
        self.recent.append(thread_id)
        if self.clients is not None:
            self.clients.tell(list(self.recent), thread_id)

    def run(self) -> None:
        with httpx.Client(base_url=self.pod.url, timeout=60) as client:
            while not self.stopping.is_set():
                kind = self.kinds[len(self.results) % len(self.kinds)]
                self.results.append(drive_run(client, self.pod.kotlin, kind, self.pod.data_root,
                                              on_start=self.started))


def build_plan(args: argparse.Namespace) -> dict[str, Any]:
    phases = [{"name": "steady", "seconds": args.seconds, "rate": args.rate}]
    phases += [{"name": f"ramp {total:g}/s", "seconds": args.ramp_seconds, "rate": total / args.pollers}
               for total in args.ramp]
    return {"start_at": time.time() + LEAD_SECONDS, "phases": phases}


def ms(value: float) -> str:
    return f"{value * 1000:8.1f}"


def merge(results: dict[str, dict[str, dict[str, Any]]], names: list[str], phase: str) -> dict[str, Any]:
    """One phase's figures of several client processes together."""
    merged: dict[str, Any] = {"counts": collections.Counter(), "errors": collections.Counter(),
                              "latencies": collections.defaultdict(list), "loop_lag_p99": {}}
    for name in names:
        figures = results.get(name, {}).get(phase)
        if figures is None:
            merged["errors"][f"{name}: no figures"] += 1
            continue
        merged["counts"].update(figures["counts"])
        merged["errors"].update(figures["errors"])
        for key, values in figures["latencies"].items():
            merged["latencies"][key] += values
        merged["loop_lag_p99"][name] = figures["loop_lag_p99"]
    return merged


def print_phase(phase: dict[str, Any], pollers: dict[str, Any], clients: dict[str, Any], runs: list[RunResult],
                service: Pod, cpu: dict[str, float], n_pollers: int) -> None:
    seconds = phase["seconds"]
    status = pollers["latencies"].get("status", [])
    offered = n_pollers * phase["rate"]
    print(f"\n== {phase['name']}: {seconds:g} s, {n_pollers} pollers at {phase['rate']:.3g}/s each "
          f"(offered {offered:.0f}/s)")
    print(f"  /status            n {len(status):6}  achieved {len(status) / seconds:7.1f}/s   "
          f"p50 {ms(percentile(status, .5))} ms  p99 {ms(percentile(status, .99))} ms  "
          f"max {ms(max(status, default=float('nan')))} ms")
    for key in sorted(k for k in clients["latencies"] if k.startswith("console")):
        values = clients["latencies"][key]
        print(f"  {key:34} n {len(values):5}  p50 {ms(percentile(values, .5))} ms  "
              f"p99 {ms(percentile(values, .99))} ms")
    streams, headers = clients["counts"].get("sse streams", 0), clients["latencies"].get("sse headers", [])
    lag = clients["latencies"].get("sse event lag", [])
    print(f"  SSE: {streams} streams followed, {clients['counts'].get('sse events', 0)} events; headers p50 "
          f"{ms(percentile(headers, .5))} ms p99 {ms(percentile(headers, .99))} ms; live event lag p50 "
          f"{ms(percentile(lag, .5))} ms p99 {ms(percentile(lag, .99))} ms")
    errors = pollers["errors"] + clients["errors"]
    print(f"  errors: {dict(errors) if errors else 'none'}")
    ended = [r for r in runs if r.status in ("done", "error")]
    pushes = [v for r in runs if (v := first_push_ms(service.kotlin, r)) is not None]
    dispatch = [r.dispatch_ms / 1000 for r in runs if r.thread_id]
    kinds = collections.Counter(r.kind for r in runs)
    outcomes = collections.Counter(r.status for r in runs)
    print(f"  runs: {len(ended)} ended ({len(ended) / seconds:.2f}/s; {dict(kinds)}; {dict(outcomes)}); "
          f"first progress push p50 {percentile(pushes, .5):.1f} ms p99 {percentile(pushes, .99):.1f} ms; "
          f"dispatch p50 {ms(percentile(dispatch, .5)).strip()} ms p99 {ms(percentile(dispatch, .99)).strip()} ms")
    lags = {**pollers["loop_lag_p99"], **clients["loop_lag_p99"]}
    print("  CPU (% of one core): " + ", ".join(f"{name} {value:.0f}" for name, value in cpu.items())
          + "; client event-loop lag p99: " + ", ".join(f"{k} {ms(v or 0).strip()} ms" for k, v in lags.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pollers", type=int, default=200)
    parser.add_argument("--rate", type=float, default=1.0, help="requests a second of each poller (steady)")
    parser.add_argument("--sse", type=int, default=50)
    parser.add_argument("--console", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the steady phase")
    parser.add_argument("--ramp", type=lambda text: [float(v) for v in text.split(",") if v],
                        default=[50, 100, 150, 200, 300, 400], help="total /status rates of the ramp ('' for none)")
    parser.add_argument("--ramp-seconds", type=float, default=20.0)
    parser.add_argument("--knee-p99", type=float, default=1.0, help="p99 (s) beyond which a ramp step is saturated")
    parser.add_argument("--kinds", default="advice,code,approval", help=f"run kinds to cycle through, of {KINDS}")
    parser.add_argument("--poller-procs", type=int, default=1)
    parser.add_argument("--warmup-runs", type=int, default=6)
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    load = os.getloadavg()
    with pod(max_concurrent_orchestrations=1) as service:
        with httpx.Client(base_url=service.url, timeout=60) as client:
            warm = [drive_run(client, service.kotlin, kinds[i % len(kinds)], service.data_root)
                    for i in range(args.warmup_runs)]
        plan = build_plan(args)
        clients = LoadClients(service.url, plan, pollers=args.pollers, procs=args.poller_procs, sse=args.sse,
                              console=args.console)
        dispatcher = Dispatcher(service, kinds, clients)
        for result in warm:
            dispatcher.started(result.thread_id)
        dispatcher.start()
        meter_pids = {"service": service.pid, "nx-27017": service.mongo_pid or 0, "bench (fakes)": os.getpid(),
                      **clients.pids()}
        cpu: dict[str, dict[str, float]] = {}
        for phase in plan["phases"]:
            start = plan["start_at"] + sum(p["seconds"] for p in plan["phases"][:plan["phases"].index(phase)])
            time.sleep(max(0.0, start - time.time()))
            meter = CpuMeter(meter_pids)
            meter.start(time.time())
            time.sleep(max(0.0, start + phase["seconds"] - time.time()))
            cpu[phase["name"]] = meter.stop(time.time())
        results = clients.results(timeout=120)
        dispatcher.stopping.set()
        dispatcher.join(130)
    poller_names = [name for name in results if name.startswith("pollers")]
    print(f"\nload average at the start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (other work on the machine "
          f"counts in every figure); {os.cpu_count()} cores")
    print(f"clients: {args.pollers} pollers in {args.poller_procs} process(es), {args.sse} SSE subscribers and "
          f"{args.console} console pages in one; run kinds {kinds}")
    steps = []
    start = plan["start_at"]
    for phase in plan["phases"]:
        end = start + phase["seconds"]
        runs = [r for r in dispatcher.results if start <= r.answered < end]
        pollers = merge(results, poller_names, phase["name"])
        print_phase(phase, pollers, merge(results, ["clients"], phase["name"]), runs, service, cpu[phase["name"]],
                    args.pollers)
        if phase["name"] != "steady":
            status = pollers["latencies"].get("status", [])
            steps.append((args.pollers * phase["rate"], len(status) / phase["seconds"], percentile(status, .99)))
        start = end
    if steps:
        good, bad = knee(steps, args.knee_p99)
        best = max(achieved for _, achieved, _ in steps)
        print(f"\n/status ramp: kept up to {good if good is not None else 'none'} requests/s; "
              f"saturated at {bad if bad is not None else 'no step'} (p99 > {args.knee_p99:g} s or achieved "
              f"< 90 % of offered); highest achieved {best:.0f}/s")


if __name__ == "__main__":
    main()
