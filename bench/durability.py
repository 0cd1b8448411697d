"""Cost of LangGraph's durability modes per node: prints figures, asserts nothing.

    .venv/bin/python -m bench.durability [--nodes 20] [--runs 5] [--work-ms 20] [--state-kb 20]

A chain of `--nodes` nodes, each standing in for real work with `--work-ms` of sleep (an LLM
call or an agent step is far longer), over a state of `--state-kb` KiB (the size of a planned
run's state), checkpointed by MongoDBSaver on a sync pymongo client as the service does
(nx-27017 on loopback, or `MONGODB_URL`). For each mode it prints the wall time per node minus
the work: what the mode adds to every node.

  * `exit`: one checkpoint when the segment ends; a crash loses the whole segment.
  * `async`: every step's checkpoint is written while the next step runs; a failed write
    surfaces only when the segment ends.
  * `sync`: every step's checkpoint is written before the next step starts; a failed write
    raises at the step that made it. The service uses this one (`app/runs/lifecycle.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.mongodb import MongoDBSaver
from langgraph.types import Durability
from pymongo import MongoClient

from app.dev.embedded_mongo import EmbeddedMongo
from bench import graphs

MODES: tuple[Durability, ...] = ("exit", "async", "sync")


class BenchState(TypedDict, total=False):
    payload: str
    step: int


def chain(saver: MongoDBSaver, nodes: int, work_seconds: float) -> Any:
    async def node(state: BenchState) -> dict[str, Any]:
        await asyncio.sleep(work_seconds)
        return {"step": state.get("step", 0) + 1}

    return graphs.chain(saver, BenchState, [f"n{i}" for i in range(nodes)], lambda _name: node)


async def per_node_overhead(mongo_url: str, mode: Durability, *, nodes: int, runs: int, work_seconds: float,
                            state_kb: int) -> list[float]:
    """Milliseconds each node costs beyond its work, one figure per run."""
    client: MongoClient[dict[str, Any]] = MongoClient(mongo_url)
    try:
        graph = chain(MongoDBSaver(client, db_name=f"bench_durability_{uuid.uuid4().hex[:8]}"), nodes, work_seconds)
        state: BenchState = {"payload": "x" * (state_kb * 1024), "step": 0}
        await graph.ainvoke(state, {"configurable": {"thread_id": "warm-up"}}, durability=mode)
        figures = []
        for i in range(runs):
            started = time.perf_counter()
            await graph.ainvoke(state, {"configurable": {"thread_id": f"{mode}-{i}"}}, durability=mode)
            elapsed = time.perf_counter() - started
            figures.append((elapsed / nodes - work_seconds) * 1000)
        return figures
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work-ms", type=float, default=20.0)
    parser.add_argument("--state-kb", type=int, default=20)
    args = parser.parse_args()

    def measure(url: str, store: str) -> None:
        print(f"store: {store}; {args.nodes} nodes × {args.runs} runs, {args.work_ms:g} ms of work per node, "
              f"state {args.state_kb} KiB")
        for mode in MODES:
            figures = asyncio.run(per_node_overhead(url, mode, nodes=args.nodes, runs=args.runs,
                                                    work_seconds=args.work_ms / 1000, state_kb=args.state_kb))
            print(f"  durability={mode:5}  added per node: median {statistics.median(figures):6.2f} ms, "
                  f"max {max(figures):6.2f} ms")

    if os.environ.get("MONGODB_URL"):
        measure(os.environ["MONGODB_URL"], "MONGODB_URL")
        return
    work = Path(tempfile.mkdtemp(prefix="jervis-bench-"))
    with EmbeddedMongo(data_dir=work / "mongo", work_dir=work) as mongo:
        measure(mongo.url, "nx-27017 on loopback")


if __name__ == "__main__":
    main()
