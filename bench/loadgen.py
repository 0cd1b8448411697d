"""The client side of bench/load.py, run as processes of their own so that the clients' CPU is
neither the service's nor that of the fake servers in the benchmark's process:

    python -m bench.loadgen pollers URL PLAN_JSON     # /status pollers
    python -m bench.loadgen clients URL PLAN_JSON     # SSE subscribers and console pages
    python -m bench.loadgen burst URL SPEC_JSON       # bench/burst.py: dispatches all at once

asyncio + aiohttp (lighter per request than httpx, so fewer client cores per answer). The plan
names the phases (name, seconds, per-poller rate), the number of pollers or subscribers and
pages, and the wall time the first phase starts, so that every process keeps the same clock.
Thread ids arrive on stdin as JSON lines `{"threads": [...], "current": id}` (the runs the
benchmark dispatches); each phase's figures go to stdout as one JSON line at the end (an answer
that comes late counts in the phase its request started in).

Pollers are closed loops, like a Kotlin task polling its run: poller i asks `/status/{id}` for
the i-th of the recent threads every 1/rate s, and when an answer comes late it asks again at
once (no burst to catch up). SSE subscribers follow each new run's `/stream/{id}` to its end
(lag = arrival - the event's own `ts`). Console pages poll what app/api/console/console.js
polls: a list page `/runs?limit=100` every 2 s, a run page `/runs/{id}` of the newest run every
2.5 s, and each the waiting badge `/runs?status=interrupted&limit=200` every 3 s (the run page's
own EventSource is left out: the SSE subscribers stand for those). A probe task measures the
event loop's lag: when it is large, the latencies here are partly the client's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.measure import percentile

REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30)
LIST_POLL, RUN_POLL, WAITING_POLL = 2.0, 2.5, 3.0
#: How long after the last phase the answers to its requests are still waited for.
LATE_SECONDS = 60.0


@dataclass
class Phase:
    name: str
    start: float
    end: float
    rate: float
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    loop_lag: list[float] = field(default_factory=list)


class Plan:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.phases: list[Phase] = []
        start = float(spec["start_at"])
        for phase in spec["phases"]:
            self.phases.append(Phase(phase["name"], start, start + phase["seconds"], phase.get("rate", 1.0)))
            start += phase["seconds"]
        self.end = start

    def at(self, when: float) -> Phase | None:
        return next((phase for phase in self.phases if phase.start <= when < phase.end), None)


class Threads:
    """The run ids the benchmark sent last (newest last), and a wake-up for each new one."""

    def __init__(self) -> None:
        self.recent: list[str] = []
        self.current: str | None = None
        self.changed = asyncio.Event()

    def update(self, message: dict[str, Any]) -> None:
        self.recent = message.get("threads", self.recent)
        self.current = message.get("current", self.current)
        self.changed.set()
        self.changed = asyncio.Event()


async def read_threads(threads: Threads) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 22)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        threads.update(json.loads(line))


async def timed_get(session: aiohttp.ClientSession, plan: Plan, key: str, path: str) -> None:
    """One GET, its latency and outcome counted in the phase it started in."""
    started = time.time()
    phase = plan.at(started)
    try:
        async with session.get(path, timeout=REQUEST_TIMEOUT) as response:
            await response.read()
            outcome = None if response.status == 200 else f"http {response.status}"
    except TimeoutError:
        outcome = "timeout"
    except aiohttp.ClientError as exc:
        outcome = type(exc).__name__
    if phase is None:
        return
    phase.counts[key] += 1
    if outcome is None:
        phase.latencies[key].append(time.time() - started)
    else:
        phase.errors[f"{key}: {outcome}"] += 1


async def poller(session: aiohttp.ClientSession, plan: Plan, threads: Threads, index: int) -> None:
    phase = plan.phases[0]
    due = phase.start + random.uniform(0, 1 / phase.rate)
    while due < plan.end:
        await asyncio.sleep(max(0.0, due - time.time()))
        current = plan.at(due)
        if current is None:
            break
        if threads.recent:
            thread_id = threads.recent[-1 - index % len(threads.recent)]
            await timed_get(session, plan, "status", f"/status/{thread_id}")
        due = max(due + 1 / current.rate, time.time())


async def subscriber(session: aiohttp.ClientSession, plan: Plan, threads: Threads) -> None:
    followed = None
    while time.time() < plan.end:
        if threads.current is None or threads.current == followed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(threads.changed.wait(), max(0.1, plan.end - time.time()))
            continue
        followed = threads.current
        await follow(session, plan, followed)


async def follow(session: aiohttp.ClientSession, plan: Plan, thread_id: str) -> None:
    started = time.time()
    phase = plan.at(started)
    outcome = None
    events, lags = 0, []
    try:
        async with session.get(f"/stream/{thread_id}", timeout=aiohttp.ClientTimeout(total=600)) as response:
            headers = time.time() - started
            if response.status != 200:
                outcome = f"http {response.status}"
            else:
                async for raw in response.content:
                    line = raw.decode()
                    if line.startswith("data: "):
                        events += 1
                        published = float(json.loads(line[6:]).get("ts", 0))
                        if published >= started:  # published while followed (not a replay)
                            lags.append(time.time() - published)
    except TimeoutError:
        outcome = "timeout"
    except aiohttp.ClientError as exc:
        outcome = type(exc).__name__
    if phase is None:
        return
    phase.counts["sse streams"] += 1
    phase.counts["sse events"] += events
    phase.latencies["sse event lag"] += lags
    if outcome is None:
        phase.latencies["sse headers"].append(headers)
    else:
        phase.errors[f"sse: {outcome}"] += 1


async def console_page(session: aiohttp.ClientSession, plan: Plan, threads: Threads, index: int) -> None:
    """A list page (even index) or a run page of the newest run (odd), and the waiting badge."""
    list_page = index % 2 == 0
    every = LIST_POLL if list_page else RUN_POLL
    now = time.time()
    due_page, due_badge = now + random.uniform(0, every), now + random.uniform(0, WAITING_POLL)
    while min(due_page, due_badge) < plan.end:
        await asyncio.sleep(max(0.0, min(due_page, due_badge) - time.time()))
        if due_badge <= due_page:
            await timed_get(session, plan, "console /runs?status=interrupted", "/runs?status=interrupted&limit=200")
            due_badge = max(due_badge + WAITING_POLL, time.time())
        else:
            if list_page:
                await timed_get(session, plan, "console /runs", "/runs?limit=100")
            elif threads.current:
                await timed_get(session, plan, "console /runs/{id}", f"/runs/{threads.current}")
            due_page = max(due_page + every, time.time())


async def loop_lag_probe(plan: Plan, every: float = 0.05) -> None:
    while time.time() < plan.end:
        asked = time.time()
        await asyncio.sleep(every)
        phase = plan.at(asked)
        if phase is not None:
            phase.loop_lag.append(time.time() - asked - every)


def summary(phase: Phase) -> dict[str, Any]:
    return {"phase": phase.name, "seconds": phase.end - phase.start, "rate": phase.rate,
            "counts": dict(phase.counts), "errors": dict(phase.errors),
            "latencies": {key: [round(v, 5) for v in values] for key, values in phase.latencies.items()},
            "loop_lag_p99": percentile(phase.loop_lag, 0.99) if phase.loop_lag else None,
            "loop_lag_max": max(phase.loop_lag, default=None)}


async def burst(url: str, spec: dict[str, Any]) -> None:
    """`POST /orchestrate/stream` of every body in the file at once (one connection each, opened
    before); one JSON line per answer: task id, HTTP status, seconds, thread id or error."""
    bodies = json.loads(Path(spec["bodies_file"]).read_text(encoding="utf-8"))
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(base_url=url, connector=connector) as session:
        async def connect() -> None:
            async with session.get("/health") as response:
                await response.read()

        await asyncio.gather(*(connect() for _ in bodies))
        start = asyncio.Event()

        async def send(body: dict[str, Any]) -> dict[str, Any]:
            await start.wait()
            sent = time.perf_counter()
            answer: dict[str, Any] = {"task_id": body["task_id"], "status": 0}
            try:
                async with session.post("/orchestrate/stream", json=body, timeout=REQUEST_TIMEOUT) as response:
                    answer["status"] = response.status
                    reply = await response.json(content_type=None)
                    answer["thread_id"] = reply.get("thread_id", "") if response.status == 200 else ""
            except (TimeoutError, aiohttp.ClientError) as exc:
                answer["error"] = type(exc).__name__
            answer["seconds"] = time.perf_counter() - sent
            return answer

        tasks = [asyncio.create_task(send(body)) for body in bodies]
        await asyncio.sleep(0.05)
        cpu, wall = time.process_time(), time.perf_counter()
        start.set()
        answers = await asyncio.gather(*tasks)
        print(json.dumps({"answers": answers, "cpu_seconds": time.process_time() - cpu,
                          "seconds": time.perf_counter() - wall}), flush=True)


async def main(role: str, url: str, spec: dict[str, Any]) -> None:
    if role == "burst":
        await burst(url, spec)
        return
    plan = Plan(spec)
    threads = Threads()
    reader = asyncio.create_task(read_threads(threads))
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    async with aiohttp.ClientSession(base_url=url, connector=connector) as session:
        await asyncio.sleep(max(0.0, plan.phases[0].start - time.time()))
        if role == "pollers":
            tasks = [poller(session, plan, threads, spec["offset"] + i) for i in range(spec["pollers"])]
        else:
            tasks = [subscriber(session, plan, threads) for _ in range(spec["sse"])]
            tasks += [console_page(session, plan, threads, i) for i in range(spec["console"])]
        # Late answers count in the phase their request started in: the figures go out at the end.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*tasks, loop_lag_probe(plan)), plan.end + LATE_SECONDS - time.time())
    reader.cancel()
    for phase in plan.phases:
        print(json.dumps(summary(phase)), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
