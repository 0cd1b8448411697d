"""Orchestration overhead benchmark: prints figures, asserts nothing.

    .venv/bin/python -m bench.orchestration [--runs 40]

Measures, on one nx-27017 store with an instant scripted LLM:
  * raw LangGraph + MongoDBSaver: wall time per node of a trivial 4-node graph;
  * the service: wall time per node of an advice orchestration (4 nodes: intake, evidence_pack,
    respond, finalize) from dispatch to the `done` push, over HTTP with real pushes;
  * first progress push: from the moment `POST /orchestrate/stream` answered to the moment the
    fake Kotlin server received the first progress push;
  * `POST /orchestrate/stream` latency (p50 / p99).
Targets (issue #2): service per node ≤ 2× raw, first push ≤ 50 ms, dispatch p99 ≤ 20 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, TypedDict

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
from langgraph.checkpoint.mongodb import MongoDBSaver
from pymongo import MongoClient

from app.dev.embedded_mongo import EmbeddedMongo
from bench import graphs
from tests.fixtures.kb_server import FakeKbServer
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.llm_server import ScriptedLlmServer
from tests.fixtures.service import ServiceProcess, service_env
from tests.support import advice_script, orchestrate_body

NODES = 4
LLM_CALLS = 2  # intake and respond


class RawState(TypedDict, total=False):
    query: str
    answer: str
    step: int


def raw_graph(saver: MongoDBSaver) -> Any:
    def make_node(name: str) -> Any:
        async def node(state: RawState) -> dict[str, Any]:
            return {"step": state.get("step", 0) + 1, "answer": name}
        return node

    return graphs.chain(saver, RawState, [f"n{i}" for i in range(NODES)], make_node)


async def bench_raw(mongo_url: str, runs: int) -> float:
    client: MongoClient = MongoClient(mongo_url)
    graph = raw_graph(MongoDBSaver(client, db_name=f"bench_raw_{uuid.uuid4().hex[:8]}"))
    await graph.ainvoke({"query": "warm-up"}, {"configurable": {"thread_id": "warm"}})
    started = time.perf_counter()
    for i in range(runs):
        await graph.ainvoke({"query": "Co umíš?"}, {"configurable": {"thread_id": f"raw-{i}"}})
    elapsed = time.perf_counter() - started
    client.close()
    return elapsed / (runs * NODES)


def bench_service(service: ServiceProcess, kotlin: FakeKotlinServer, llm: ScriptedLlmServer,
                  runs: int) -> dict[str, list[float]]:
    # An instant LLM: the whole answer in one streamed piece, no generation delay.
    for rule in advice_script("Instant answer"):
        rule.chunk_size = 100_000
        llm.add(rule)
    figures: dict[str, list[float]] = {"per_node": [], "first_push": [], "dispatch": []}
    node_times: dict[str, list[float]] = {}
    with httpx.Client(base_url=service.url, timeout=30) as client:
        for i in range(runs + 1):
            body = orchestrate_body(query="Co umíš?")
            sent = time.time()
            response = client.post("/orchestrate/stream", json=body)
            answered = time.time()
            response.raise_for_status()
            thread_id = response.json()["thread_id"]
            kotlin.wait_for_status(thread_id=thread_id, status="done", timeout=30)
            if i == 0:
                continue  # warm-up: first litellm call, first collection access
            records = [e for e in kotlin.events if e.body.get("taskId") == body["task_id"]]
            first = min(e.received_at_wall for e in records if e.route.endswith("progress"))
            done = max(e.received_at_wall for e in records if e.route.endswith("status"))
            figures["dispatch"].append((answered - sent) * 1000)
            figures["first_push"].append((first - answered) * 1000)
            figures["per_node"].append((done - sent) * 1000 / NODES)
            for node, duration in node_durations(client, thread_id):
                node_times.setdefault(node, []).append(duration)
    figures |= {f"node {name}": values for name, values in node_times.items()}
    return figures


def node_durations(client: httpx.Client, thread_id: str) -> list[tuple[str, float]]:
    """(node, ms) from the run's `node_end` SSE events: time inside the node, checkpoint excluded."""
    with client.stream("GET", f"/stream/{thread_id}") as response:
        text = "".join(response.iter_text())
    found = []
    for line in text.splitlines():
        if line.startswith("data: ") and '"node_end"' in line:
            data = json.loads(line[6:])
            if data.get("duration_ms") is not None:
                found.append((data["node"], data["duration_ms"]))
    return found


async def bench_litellm(llm_url: str, runs: int) -> float:
    """Bare `litellm.acompletion` streaming call against the instant server: the floor every
    LLM-calling node pays, whatever the service does around it."""
    import litellm

    async def call() -> None:
        stream = await litellm.acompletion(model="ollama_chat/test-model", api_base=llm_url, stream=True,
                                           messages=[{"role": "user", "content": "hi"}])
        async for _ in stream:
            pass

    for _ in range(3):
        await call()
    started = time.perf_counter()
    for _ in range(runs):
        await call()
    return (time.perf_counter() - started) * 1000 / runs


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="jervis-bench-"))
    with EmbeddedMongo(data_dir=work / "mongo", work_dir=work) as mongo:
        servers = [ScriptedLlmServer(), FakeKotlinServer(), FakeKbServer()]
        for server in servers:
            server.start()
        llm, kotlin, kb = servers
        raw = asyncio.run(bench_raw(mongo.url, args.runs)) * 1000
        llm.script(*advice_script("warm"))
        litellm_ms = asyncio.run(bench_litellm(llm.url, args.runs))
        llm.reset()
        (work / "data").mkdir()
        service = ServiceProcess(env=service_env(mongo_url=mongo.url, llm_url=llm.url, kotlin_url=kotlin.url,
                                                 kb_url=kb.url, data_root=work / "data"),
                                 log_path=work / "service.log").start()
        try:
            figures = bench_service(service, kotlin, llm, args.runs)
        finally:
            service.stop()
            for server in servers:
                server.stop()
    per_node = statistics.median(figures["per_node"])
    print(f"runs: {args.runs} (after one warm-up), store: nx-27017 on loopback")
    print(f"raw LangGraph + MongoDBSaver   per node: {raw:7.2f} ms")
    print(f"service (advice, 4 nodes)       per node: {per_node:7.2f} ms median, "
          f"p90 {p(figures['per_node'], 0.9):.2f} ms  → {per_node / raw:.2f}× raw (target ≤ 2×)")
    without_llm = per_node - LLM_CALLS * litellm_ms / NODES
    print(f"bare litellm streaming call (instant server):  {litellm_ms:6.2f} ms × {LLM_CALLS} calls per run")
    print(f"service per node without the litellm floor: {without_llm:7.2f} ms → {without_llm / raw:.2f}× raw")
    print(f"first progress push after dispatch:  median {statistics.median(figures['first_push']):6.2f} ms, "
          f"max {max(figures['first_push']):.2f} ms (target ≤ 50 ms)")
    for key in sorted(k for k in figures if k.startswith("node ")):
        print(f"  {key:28} median {statistics.median(figures[key]):6.2f} ms (inside the node, as streamed)")
    print(f"POST /orchestrate/stream latency:    p50 {p(figures['dispatch'], 0.5):6.2f} ms, "
          f"p99 {p(figures['dispatch'], 0.99):.2f} ms (target ≤ 20 ms)")


if __name__ == "__main__":
    main()
