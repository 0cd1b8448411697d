"""Orchestration overhead benchmark: prints figures, asserts nothing.

    .venv/bin/python -m bench.orchestration [--runs 40]

Measures, on one nx-27017 store with an instant scripted LLM, side by side (each round runs the raw
graphs once each and the service once, so a load change on the machine hits all alike):
  * raw LangGraph + MongoDBSaver: wall time per node of a trivial 4-node graph, checkpointed the way
    the service checkpoints (MongoDBSaver on a sync pymongo client from `create_sync_client`, the
    service's durability mode, the same nx-27017 process);
  * the same raw graph whose first and third nodes make the service's two LLM calls (the service's
    `LitellmProvider`, same settings, same scripted server): LangGraph doing the advice run's model
    work with none of the service around it;
  * the service: wall time per node of an advice orchestration (4 nodes: intake, evidence_pack,
    respond, finalize, two of them calling the LLM) from dispatch to the `done` push, over HTTP
    with real pushes. Three ratios: service ÷ raw (the LLM calls counted as the service's
    overhead: the issue's figure); the service's time outside its two model calls ÷ raw (each
    call's own duration as the service measured it for the run's usage, litellm and the HTTP
    round trip included, taken off: the per-node overhead of the service itself); and service ÷
    raw with the same LLM calls (what the service adds around the same model work);
  * first progress push: from the moment `POST /orchestrate/stream` answered to the moment the
    fake Kotlin server received the first progress push;
  * `POST /orchestrate/stream` latency (p50 / p99);
  * the largest checkpoint of a 10-step coding run (scripted agent, instant LLM).
Targets (issue #13): service per node ≤ 2× raw, first push ≤ 50 ms, dispatch p99 ≤ 20 ms,
checkpoint ≤ 64 KB.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
from langgraph.checkpoint.mongodb import MongoDBSaver
from pymongo import MongoClient
from pymongo.collection import Collection

from app.config import Settings
from app.llm.provider import LitellmProvider
from app.persistence.mongo import create_sync_client
from app.persistence.runs import COLLECTION_NAME as RUNS
from app.runs.lifecycle import DURABILITY
from bench import graphs
from bench.loopback import loopback
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.llm_server import Reply, ScriptedLlmServer
from tests.fixtures.service import ServiceProcess, service_env
from tests.support import (
    advice_script,
    classification,
    file_block,
    goals_json,
    kotlin_rules,
    make_git_repo,
    new_task_id,
    node_marker,
    orchestrate_body,
    steps_json,
)

NODES = 4
LLM_CALLS = 2  # intake and respond
CODING_STEPS = 10
CHECKPOINT_LIMIT = 64 * 1024


class RawState(TypedDict, total=False):
    query: str
    answer: str
    step: int


#: Nodes of the raw chain that make the advice run's LLM calls: (the scripted rule's node, JSON answer).
LLM_NODES = {"n0": ("intake", True), "n2": ("respond", False)}


def raw_graph(saver: MongoDBSaver, llm: LitellmProvider | None = None) -> Any:
    def make_node(name: str) -> Any:
        async def node(state: RawState) -> dict[str, Any]:
            answer = name
            if llm is not None and name in LLM_NODES:
                marker, json_mode = LLM_NODES[name]
                answer = await llm.complete([{"role": "system", "content": node_marker(marker)},
                                             {"role": "user", "content": state["query"]}], json_mode=json_mode,
                                            max_tokens=400)
            return {"step": state.get("step", 0) + 1, "answer": answer}
        return node

    return graphs.chain(saver, RawState, [f"n{i}" for i in range(NODES)], make_node)


class RawChain:
    """The raw graph on the service's kind of checkpointer: one `run()` is one 4-node invocation;
    with `llm_url`, two of its nodes call the service's provider as the advice run does."""

    def __init__(self, mongo_url: str, llm_url: str | None = None) -> None:
        self._client: MongoClient[dict[str, Any]] = create_sync_client(mongo_url)
        llm = None
        if llm_url is not None:
            llm = LitellmProvider(Settings(ollama_url=llm_url, local_model="test-model"))
        self._graph = raw_graph(MongoDBSaver(self._client, db_name=f"bench_raw_{uuid.uuid4().hex[:8]}"), llm)
        self._runner = asyncio.Runner()

    def run(self) -> float:
        """Milliseconds per node of one invocation on a new thread."""
        config = {"configurable": {"thread_id": f"raw-{uuid.uuid4().hex}"}}
        started = time.perf_counter()
        self._runner.run(self._graph.ainvoke({"query": "Co umíš?"}, config, durability=DURABILITY))
        return (time.perf_counter() - started) * 1000 / NODES

    def close(self) -> None:
        self._runner.close()
        self._client.close()


@dataclass
class ServiceRun:
    thread_id: str
    dispatch: float
    """ms until `POST /orchestrate/stream` answered"""
    first_push: float
    """ms from that answer until Kotlin received the first progress push"""
    sent: float
    """wall clock (s) when the request was sent"""
    done: float
    """wall clock (s) when Kotlin received `done`"""

    @property
    def per_node(self) -> float:
        """ms from dispatch until Kotlin received `done`, divided by the nodes"""
        return (self.done - self.sent) * 1000 / NODES


def model_call_ms(runs: Collection[dict[str, Any]], thread_id: str) -> float:
    """ms a run spent inside its LLM calls: the durations its budget recorded per node and tier
    (`LitellmProvider._call`: the litellm call and the streamed answer, retries included)."""
    record = runs.find_one({"_id": thread_id}, {"usage": 1}) or {}
    return 1000 * sum(float(u.get("seconds", 0)) for u in record.get("usage", {}).get("by_node_tier", {}).values())


def service_run(client: httpx.Client, kotlin: FakeKotlinServer) -> ServiceRun:
    """One advice orchestration from dispatch to the `done` push, timed from Kotlin's side."""
    body = orchestrate_body(query="Co umíš?")
    sent = time.time()
    response = client.post("/orchestrate/stream", json=body)
    answered = time.time()
    response.raise_for_status()
    thread_id = response.json()["thread_id"]
    kotlin.wait_for_status(thread_id=thread_id, status="done", timeout=30)
    records = [e for e in kotlin.events if e.body.get("taskId") == body["task_id"]]
    first = min(e.received_at_wall for e in records if e.route.endswith("progress"))
    done = max(e.received_at_wall for e in records if e.route.endswith("status"))
    return ServiceRun(thread_id, dispatch=(answered - sent) * 1000, first_push=(first - answered) * 1000,
                      sent=sent, done=done)


def script_instant_advice(llm: ScriptedLlmServer) -> None:
    """An instant LLM for the advice run: each answer in one streamed piece, no generation delay."""
    for rule in advice_script("Instant answer"):
        rule.chunk_size = 100_000
        llm.add(rule)


def bench_side_by_side(raw: RawChain, raw_llm: RawChain, service: ServiceProcess, kotlin: FakeKotlinServer,
                       llm: ScriptedLlmServer, records: Collection[dict[str, Any]],
                       runs: int) -> dict[str, list[float]]:
    script_instant_advice(llm)
    figures: dict[str, list[float]] = {"raw": [], "raw_llm": [], "per_node": [], "outside_model": [],
                                       "first_push": [], "dispatch": []}
    node_times: dict[str, list[float]] = {}
    with httpx.Client(base_url=service.url, timeout=30) as client:
        raw.run()
        raw_llm.run()
        service_run(client, kotlin)  # warm-up: first litellm call, first collection access
        for i in range(runs):
            # Alternate which goes first, so neither always follows the other's background work.
            if i % 2:
                figures["raw"].append(raw.run())
                figures["raw_llm"].append(raw_llm.run())
            run = service_run(client, kotlin)
            if not i % 2:
                figures["raw"].append(raw.run())
                figures["raw_llm"].append(raw_llm.run())
            figures["per_node"].append(run.per_node)
            figures["outside_model"].append(run.per_node - model_call_ms(records, run.thread_id) / NODES)
            figures["first_push"].append(run.first_push)
            figures["dispatch"].append(run.dispatch)
            for node, duration in node_durations(client, run.thread_id):
                node_times.setdefault(node, []).append(duration)
    figures |= {f"node {name}": values for name, values in node_times.items()}
    llm.reset()
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


def largest_checkpoint(service: ServiceProcess, kotlin: FakeKotlinServer, llm: ScriptedLlmServer, mongo_url: str,
                       data_root: Path) -> tuple[int, int, str]:
    """(largest checkpoint document's serialized state in bytes, checkpoints written, run status) of a
    coding run of CODING_STEPS code steps, each writing one file through the scripted agent."""
    rel = f"clients/c1/{new_task_id()}"
    make_git_repo(data_root / rel)
    steps = steps_json(*(file_block(f"module_{i}.py", f"def f{i}():\n    return {i}") for i in range(CODING_STEPS)))
    llm.script(
        Reply(match=node_marker("intake"), content=classification("single_task", "code", "simple"), name="intake",
              chunk_size=100_000),
        Reply(match=node_marker("plan"), content=goals_json("Moduly"), name="plan", chunk_size=100_000),
        Reply(match=node_marker("plan_steps"), content=steps, name="plan_steps", chunk_size=100_000),
        Reply(match=node_marker("finalize"), content="Hotovo.", name="finalize", chunk_size=100_000),
    )
    body = orchestrate_body(workspace_path=rel, query="Přidej moduly", rules=kotlin_rules(
        require_approval_commit=False, require_approval_push=False))
    with httpx.Client(base_url=service.url, timeout=30) as client:
        response = client.post("/orchestrate/stream", json=body)
        response.raise_for_status()
        thread_id = response.json()["thread_id"]
    deadline = time.monotonic() + 180
    status = ""
    while time.monotonic() < deadline and status not in ("done", "error", "interrupted"):
        found = [s for s in kotlin.statuses if s.get("threadId") == thread_id]
        status = found[-1]["status"] if found else ""
        time.sleep(0.1)
    llm.reset()
    mongo: MongoClient[dict[str, Any]]
    with MongoClient(mongo_url) as mongo:
        checkpoints: Collection[dict[str, Any]] = mongo[service.env["CHECKPOINT_DATABASE"]]["checkpoints"]
        sizes = [len(doc["checkpoint"]) for doc in checkpoints.find({"thread_id": thread_id}, {"checkpoint": 1})]
    return max(sizes, default=0), len(sizes), status or "timeout"


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="jervis-bench-"))
    load = os.getloadavg()[0]
    with loopback(work) as stack:
        mongo, llm, kotlin, kb = stack.mongo, stack.llm, stack.kotlin, stack.kb
        data_root = work / "data"
        data_root.mkdir()
        raw = RawChain(mongo.url)
        raw_llm = RawChain(mongo.url, llm_url=llm.url)
        service = ServiceProcess(env=service_env(mongo_url=mongo.url, llm_url=llm.url, kotlin_url=kotlin.url,
                                                 kb_url=kb.url, data_root=data_root),
                                 log_path=work / "service.log").start()
        try:
            store: MongoClient[dict[str, Any]]
            with MongoClient(mongo.url) as store:
                records: Collection[dict[str, Any]] = store[service.env["MONGODB_DATABASE"]][RUNS]
                figures = bench_side_by_side(raw, raw_llm, service, kotlin, llm, records, args.runs)
            checkpoint, checkpoints, coding_status = largest_checkpoint(service, kotlin, llm, mongo.url, data_root)
        finally:
            service.stop()
            raw.close()
            raw_llm.close()
    raw_ms = statistics.median(figures["raw"])
    raw_llm_ms = statistics.median(figures["raw_llm"])
    per_node = statistics.median(figures["per_node"])
    outside = statistics.median(figures["outside_model"])
    print(f"runs: {args.runs} rounds (after one warm-up), each: both raw graphs once, the service once; "
          f"load average {load:.2f} at the start")
    print(f"store: one nx-27017 on loopback; checkpointer: MongoDBSaver on a sync pymongo client "
          f"(create_sync_client), durability={DURABILITY!r}, for both")
    print(f"raw LangGraph + MongoDBSaver     per node: {raw_ms:7.2f} ms median, p90 {p(figures['raw'], 0.9):.2f} ms")
    print(f"service (advice, {NODES} nodes, {LLM_CALLS} LLM calls) per node: {per_node:7.2f} ms median, "
          f"p90 {p(figures['per_node'], 0.9):.2f} ms")
    print(f"  of it outside the {LLM_CALLS} LLM calls        per node: {outside:7.2f} ms median, "
          f"p90 {p(figures['outside_model'], 0.9):.2f} ms")
    print(f"raw + the same {LLM_CALLS} LLM calls         per node: {raw_llm_ms:7.2f} ms median, "
          f"p90 {p(figures['raw_llm'], 0.9):.2f} ms")
    print(f"ratio service ÷ raw (the LLM calls counted as overhead): {per_node / raw_ms:.2f}× (target ≤ 2×)")
    print(f"ratio service outside its LLM calls ÷ raw (the service's own per-node overhead): "
          f"{outside / raw_ms:.2f}× (target ≤ 2×)")
    print(f"ratio service ÷ raw with the same LLM calls (overhead around the model work): "
          f"{per_node / raw_llm_ms:.2f}×")
    extra = (per_node - raw_llm_ms) * NODES
    dispatch = statistics.median(figures["dispatch"])
    lookup = statistics.median(figures.get("node evidence_pack") or [0.0])
    print(f"  the service's extra per run: {extra:.1f} ms = until its 200 (the run record and the lock, written "
          f"before it) {dispatch:.1f} ms + evidence_pack (the chat's previous run read from the context store: "
          f"none in the raw graph) {lookup:.1f} ms + the rest "
          f"(progress and status pushes through the outbox, the outcome's writes, the delivery of `done`) "
          f"{extra - dispatch - lookup:.1f} ms")
    print(f"first progress push after dispatch:  median {statistics.median(figures['first_push']):6.2f} ms, "
          f"max {max(figures['first_push']):.2f} ms (target ≤ 50 ms)")
    for key in sorted(k for k in figures if k.startswith("node ")):
        print(f"  {key:28} median {statistics.median(figures[key]):6.2f} ms (inside the node, as streamed)")
    print(f"POST /orchestrate/stream latency:    p50 {p(figures['dispatch'], 0.5):6.2f} ms, "
          f"p99 {p(figures['dispatch'], 0.99):.2f} ms (target ≤ 20 ms)")
    print(f"largest checkpoint of a {CODING_STEPS}-step coding run ({coding_status}, {checkpoints} checkpoints): "
          f"{checkpoint / 1024:.1f} KB (limit {CHECKPOINT_LIMIT // 1024} KB)")


if __name__ == "__main__":
    main()
