"""Goals of a wave side by side: an epic's wall time one goal at a time and two at once. Prints figures.

    .venv/bin/python -m bench.epic_waves [--runs 3] [--agent-seconds 5] [--steps 1] [--dependent]

An epic of two independent goals (with `--dependent`, a third that needs both: a second wave of
one goal) runs from the request to the commit, once with `epic_max_parallel_goals=1` (the goals
one after another in the workspace) and once with `=2` (the goals of a wave in their own git
worktrees at once, merged after: app/graph/nodes/select_goal.py, run_goal.py, merge_wave.py),
`--runs` times each, the two modes taking turns. Each goal has `--steps` code steps; the scripted
agent (tests/fixtures/scripted_agent.py, through the agent entrypoint and the LocalRunner) sleeps
`--agent-seconds` in each and writes one file; the scripted LLM answers at once.

In-process, not through the HTTP service: the compiled graph (`build_graph`) on the service's
checkpointer (MongoDBSaver on nx-27017, `durability="sync"`), a RunContext built like the
service's (LitellmProvider behind the approval gate, the LocalRunner, the context store on the same
nx-27017, the fake KB and Kotlin servers), driven the way the run driver drives it: the plan gate
approved, the commit gate approved, each goal committed. Left out: the service's HTTP layer, run
records, the outbox and its pushes, and the LLM scope (budget); these cost the same in both modes.

Each run starts on a fresh git repository (`--repo-files` small files besides the README, so a
worktree has something to check out) and is checked: every goal's files with their content, one
commit per goal touching exactly its files, nothing left behind (worktrees, goal branches), and
the mode really taken (the first wave's agents overlapping in worktrees with 2, never with 1).
A run that fails a check makes the exit code 1.

Besides the wall times, each run's time outside the agents (no coding agent's `runner.run` under
way, its process start included) is split by what the run was waiting on, each instant given to
the first of: git and test jobs (the commit), worktrees (wave base commit, `worktree add`, merge,
removal), workspace snapshots, LLM calls, checkpoints; the rest (graph, context store, KB) is
"other". An agent's time beyond its sleep (process start, the entrypoint, judging its result) is
printed apart. Sequential wall ≈ goals × (sleep + that) + outside; parallel: waves × (…) + outside.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.mongodb import MongoDBSaver
from langgraph.types import Command
from pydantic import BaseModel
from pymongo import MongoClient

from app.agents.base import AgentJob, AgentResult, LogSink, Prepare
from app.agents.local import LocalRunner
from app.agents.snapshots import WorkspaceSnapshots
from app.agents.workspace import WorkspaceManager
from app.agents.worktrees import GoalWorktrees
from app.clients.knowledge_base import KnowledgeBaseClient
from app.clients.kotlin import KotlinClient
from app.clients.outbox import OutboxWriter
from app.config import Settings
from app.graph.builder import build_graph
from app.graph.context import RunContext
from app.graph.llm_gate import ApprovingLlm
from app.llm.provider import LitellmProvider, Llm, Message, TokenSink
from app.persistence.context_store import COLLECTION_NAME as CONTEXT_COLLECTION
from app.persistence.context_store import ContextStore
from app.persistence.mongo import create_client, create_sync_client
from app.persistence.outbox import COLLECTION_NAME as OUTBOX_COLLECTION
from app.persistence.outbox import OutboxStore
from app.persistence.project_memory import COLLECTION_NAME as PROJECTS_COLLECTION
from app.persistence.project_memory import ProjectMemory
from app.runs.lifecycle import DURABILITY
from app.runs.segment import initial_state
from app.schemas.kotlin import OrchestrateRequest
from bench.loopback import loopback
from tests.fixtures.kb_server import FakeKbServer
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.llm_server import RecordedRequest, Reply, ScriptedLlmServer
from tests.support import SCRIPTED_AGENT, classification, file_block, git, make_git_repo, node_marker, orchestrate_body

P = ParamSpec("P")
T = TypeVar("T")
ModelT = TypeVar("ModelT", bound=BaseModel)

TARGET = 1.7
YES = {"approved": True, "reason": "yes", "modification": None}
REVIEW = json.dumps({"approved": True, "issues": [], "summary": "Every goal is done."})
#: Where a moment outside the agents goes, first match wins (see the module's docstring).
CATEGORIES = ("git/test jobs", "worktrees", "snapshots", "llm", "checkpoints")
MODES = {"sequential": 1, "parallel": 2}


@dataclass(frozen=True)
class Goal:
    id: str
    title: str
    dependencies: tuple[str, ...]
    files: dict[str, str]
    """path → content, one file a step"""


def epic(steps: int, dependent: bool) -> list[Goal]:
    def files(name: str, body: Callable[[int], str]) -> dict[str, str]:
        return {f"{name}_{i}.py": body(i) for i in range(steps)}

    goals = [Goal("a", "Add alpha", (), files("alpha", lambda i: f"def alpha_{i}():\n    return {i}\n")),
             Goal("b", "Add beta", (), files("beta", lambda i: f"def beta_{i}():\n    return -{i}\n"))]
    if dependent:
        goals.append(Goal("c", "Add gamma", ("a", "b"), files("gamma", lambda i: (
            f"from alpha_{i} import alpha_{i}\nfrom beta_{i} import beta_{i}\n\n\n"
            f"def gamma_{i}():\n    return alpha_{i}() + beta_{i}()\n"))))
    return goals


def llm_script(goals: list[Goal], agent_seconds: float) -> list[Reply]:
    """Instant answers (one streamed piece each): an epic of `goals`, each goal's steps, a review."""
    by_title = {g.title: g for g in goals}

    def steps(request: RecordedRequest) -> str:
        title = request.last_user.split("## Goal\n", 1)[1].split("\n", 1)[0]
        return json.dumps({"steps": [
            {"instructions": f"Write {path}\n@@SLEEP {agent_seconds}\n{file_block(path, content)}",
             "step_type": "code", "files": [path]} for path, content in by_title[title].files.items()]})

    plan = json.dumps({"goals": [{"id": g.id, "title": g.title, "description": g.title, "complexity": "simple",
                                  "dependencies": list(g.dependencies)} for g in goals]})
    rules = [Reply(match=node_marker("intake"), content=classification("epic", "code", "complex"), name="intake"),
             Reply(match=node_marker("plan_epic"), content=plan, name="plan_epic"),
             Reply(match=node_marker("plan_steps"), content=steps, name="plan_steps"),
             Reply(match=node_marker("review_epic"), content=REVIEW, name="review_epic")]
    for rule in rules:
        rule.chunk_size = 100_000
    return rules


@dataclass
class Timeline:
    """(category, start, end) of every timed call of one run, on the monotonic clock."""

    spans: list[tuple[str, float, float]] = field(default_factory=list)
    agents: list[tuple[int, str, float, float]] = field(default_factory=list)
    """goal index, workspace, start, end of each coding agent's run"""

    def wrap(self, category: str, call: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
        async def timed(*args: P.args, **kwargs: P.kwargs) -> T:
            began = time.monotonic()
            try:
                return await call(*args, **kwargs)
            finally:
                self.spans.append((category, began, time.monotonic()))
        return timed

    def outside_agents(self, start: float, end: float) -> tuple[float, dict[str, float]]:
        """Seconds of [start, end] with no agent running, and how they split by category."""
        spans = [("agents", s, e) for _, _, s, e in self.agents] + self.spans
        cuts = sorted({start, end} | {t for _, s, e in spans for t in (s, e) if start < t < end})
        order = ("agents", *CATEGORIES)
        split = dict.fromkeys((*CATEGORIES, "other"), 0.0)
        for left, right in itertools.pairwise(cuts):
            active = {c for c, s, e in spans if s <= left and e >= right}
            first = next((c for c in order if c in active), "other")
            if first != "agents":
                split[first] += right - left
        return sum(split.values()), split


class TimedRunner:
    """The LocalRunner, each job timed: coding agents by goal and workspace, git and test jobs."""

    def __init__(self, runner: LocalRunner, timeline: Timeline) -> None:
        self._runner = runner
        self._timeline = timeline

    def program(self, agent_type: str) -> str:
        return self._runner.program(agent_type)

    async def run(self, job: AgentJob, *, prepare: Prepare, on_log: LogSink | None = None) -> AgentResult:
        began = time.monotonic()
        try:
            return await self._runner.run(job, prepare=prepare, on_log=on_log)
        finally:
            if job.mode == "agent":
                self._timeline.agents.append((job.goal_index, str(job.workspace), began, time.monotonic()))
            else:
                self._timeline.spans.append(("git/test jobs", began, time.monotonic()))


class TimedLlm:
    def __init__(self, inner: Llm, timeline: Timeline) -> None:
        self._inner = inner
        self._timeline = timeline

    async def complete(self, messages: Sequence[Message], *, max_tokens: int, json_mode: bool = False,
                       on_token: TokenSink | None = None) -> str:
        return await self._timeline.wrap("llm", self._inner.complete)(messages, max_tokens=max_tokens,
                                                                      json_mode=json_mode, on_token=on_token)

    async def complete_json(self, messages: Sequence[Message], schema: type[ModelT], *, max_tokens: int,
                            on_token: TokenSink | None = None) -> ModelT:
        return await self._timeline.wrap("llm", self._inner.complete_json)(messages, schema, max_tokens=max_tokens,
                                                                           on_token=on_token)


def timed_methods(target: object, category: str, names: Sequence[str], timeline: Timeline) -> None:
    """Time these coroutine methods of one instance (calls between them count once: spans overlap)."""
    for name in names:
        setattr(target, name, timeline.wrap(category, getattr(target, name)))


WORKTREE_CALLS = ("base_commit", "create", "merge", "tree_of", "remove")
SNAPSHOT_CALLS = ("is_repository", "ensure", "recorded", "current_tree", "restore", "restore_paths", "diff",
                  "diff_stat", "read_base", "ignored")
CHECKPOINT_CALLS = ("aget_tuple", "aput", "aput_writes")


@dataclass
class Bench:
    settings: dict[str, Any]
    data_root: Path
    store: ContextStore
    projects: ProjectMemory
    kb_url: str
    kotlin_url: str
    outbox: OutboxStore
    saver_client: MongoClient[dict[str, Any]]
    checkpoint_db: str


@dataclass
class RunFigures:
    mode: str
    wall: float
    outside: float
    split: dict[str, float]
    agent_extra: float
    """seconds an agent's run took beyond its sleep, on average (process, entrypoint, result)"""
    problems: list[str]


async def run_epic(bench: Bench, goals: list[Goal], parallel: int, repo_files: int, number: int,
                   agent_seconds: float) -> RunFigures:
    """One epic from the request to the commit on a fresh repository: its figures and what was wrong."""
    timeline = Timeline()
    settings = Settings(**bench.settings, epic_max_parallel_goals=parallel)
    workspaces = WorkspaceManager(bench.data_root)
    relative = f"clients/c1/epic-{number}-p{parallel}-{uuid.uuid4().hex[:6]}"
    repo = make_repo(bench.data_root / relative, repo_files)
    base = git(repo, "rev-parse", "HEAD").strip()
    worktrees, snapshots = GoalWorktrees(), WorkspaceSnapshots()
    timed_methods(worktrees, "worktrees", WORKTREE_CALLS, timeline)
    timed_methods(snapshots, "snapshots", SNAPSHOT_CALLS, timeline)
    saver = MongoDBSaver(bench.saver_client, db_name=bench.checkpoint_db)
    timed_methods(saver, "checkpoints", CHECKPOINT_CALLS, timeline)
    graph = build_graph().compile(checkpointer=saver)
    request = OrchestrateRequest.model_validate(orchestrate_body(
        query="Build alpha and beta" + (" and gamma on both" if len(goals) > 2 else ""), workspace_path=relative))
    config: RunnableConfig = {"configurable": {"thread_id": f"thread-{request.task_id}-bench"},
                              "recursion_limit": settings.recursion_limit}
    problems: list[str] = []
    async with httpx.AsyncClient() as http:
        ctx = RunContext(
            settings=settings, llm=TimedLlm(ApprovingLlm(LitellmProvider(settings)), timeline),
            kb=KnowledgeBaseClient(http, bench.kb_url, bench.kb_url, timeout=2),
            kotlin=KotlinClient(http, bench.kotlin_url, OutboxWriter(bench.outbox)), context_store=bench.store,
            project_memory=bench.projects, runner=TimedRunner(LocalRunner(workspaces, settings), timeline),
            workspaces=workspaces, snapshots=snapshots, worktrees=worktrees)
        started = time.monotonic()
        segment_input: Any = initial_state(request)
        for gate in ("approve_plan", "git_operations", None):  # the plan gate, the commit gate, the end
            await graph.ainvoke(segment_input, config, context=ctx, durability=DURABILITY)
            snapshot = await graph.aget_state(config)
            if gate is None:
                break
            if snapshot.next != (gate,):
                problems.append(f"expected the {gate} gate, the run is at {snapshot.next or 'its end'}")
                break
            segment_input = Command(resume=YES)
        ended = time.monotonic()
    final = (await graph.aget_state(config)).values
    problems += check_work(repo, base, goals, final, timeline, parallel)
    outside, split = timeline.outside_agents(started, ended)
    spans = [e - s for _, _, s, e in timeline.agents]
    extra = statistics.mean(spans) - agent_seconds if spans else 0.0
    return RunFigures("parallel" if parallel > 1 else "sequential", ended - started, outside, split, extra, problems)


def make_repo(path: Path, files: int) -> Path:
    make_git_repo(path)
    for i in range(files):
        module = path / "lib" / f"m{i // 50}" / f"mod_{i}.py"
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_text(f'"""Module {i}."""\n\n\ndef value_{i}():\n    return {i}\n' * 10)
    if files:
        git(path, "add", "lib")
        git(path, "commit", "-q", "-m", "library")
    return path


def check_work(repo: Path, base: str, goals: list[Goal], final: dict[str, Any], timeline: Timeline,
               parallel: int) -> list[str]:
    """What is wrong with the run's result: files, commits, leftovers, and the mode it ran in."""
    problems = []
    if final.get("git_outcome") != "committed":
        problems.append(f"git_outcome {final.get('git_outcome')!r}, not 'committed'")
    for goal in goals:
        for path, content in goal.files.items():
            if not (repo / path).is_file():
                problems.append(f"{path} missing")
            elif (repo / path).read_text().strip() != content.strip():
                problems.append(f"{path} has other content")
    commits = git(repo, "log", "--format=%H %s", f"{base}..HEAD").splitlines()
    if len(commits) != len(goals):
        problems.append(f"{len(commits)} commits for {len(goals)} goals")
    by_title = {g.title: g for g in goals}
    seen = []
    for line in commits:
        sha, subject = line.split(" ", 1)
        owner = next((g for t, g in by_title.items() if subject.endswith(t)), None)
        changed = set(git(repo, "show", "--format=", "--name-only", sha).split())
        if owner is None:
            problems.append(f"commit {subject!r} names no goal")
        elif changed != set(owner.files):
            problems.append(f"commit {subject!r} changed {sorted(changed)}, not {sorted(owner.files)}")
        else:
            seen.append(owner.id)
    if sorted(seen) != sorted(g.id for g in goals):
        problems.append(f"commits of goals {seen}, not one per goal")
    if git(repo, "status", "--porcelain", "--untracked-files=no").strip():
        problems.append("uncommitted changes left in the workspace")
    if git(repo, "worktree", "list").strip().count("\n"):
        problems.append("a worktree left behind")
    if "jervis/goals" in git(repo, "branch", "--list"):
        problems.append("a goal branch left behind")
    first_wave = [i for i, g in enumerate(final.get("goals") or []) if not g.get("dependencies")]
    runs = [(g, w, s, e) for g, w, s, e in timeline.agents if g in first_wave]
    overlap = any(s1 < e2 and s2 < e1 for g1, _, s1, e1 in runs for g2, _, s2, e2 in runs if g1 < g2)
    in_worktrees = all(".jervis-goals" in w for _, w, _, _ in runs)
    if parallel > 1 and not (overlap and in_worktrees):
        problems.append("the first wave's goals did not run side by side in worktrees")
    if parallel == 1 and (overlap or any(".jervis-goals" in w for _, w, _, _ in runs)):
        problems.append("goals ran side by side with epic_max_parallel_goals=1")
    return problems


async def bench_runs(args: argparse.Namespace, work: Path, mongo_url: str, llm: ScriptedLlmServer,
                     kb: FakeKbServer, kotlin: FakeKotlinServer) -> tuple[list[RunFigures], int]:
    goals = epic(args.steps, args.dependent)
    data_root = work / "data"
    data_root.mkdir()
    settings: dict[str, Any] = {
        "ollama_url": llm.url, "local_model": "test-model", "knowledgebase_url": kb.url,
        "kotlin_server_url": kotlin.url, "data_root": data_root, "kb_timeout_seconds": 2,
        "response_language": "en", "local_agent_command": SCRIPTED_AGENT}
    client = create_client(mongo_url)
    saver_client = create_sync_client(mongo_url)
    db = client["bench_epic_waves"]
    store = ContextStore(db[CONTEXT_COLLECTION])
    await store.setup()
    bench = Bench(settings, data_root, store, ProjectMemory(db[PROJECTS_COLLECTION]), kb.url, kotlin.url,
                  OutboxStore(db[OUTBOX_COLLECTION], pod_id="bench-epic-waves"), saver_client, "bench_epic_checkpoints")
    results: list[RunFigures] = []
    failed = 0
    try:
        llm.script(*llm_script(goals, 0))  # warm-up: imports, the first litellm call, git, the checkpointer
        warm = await run_epic(bench, goals, 2, args.repo_files, 0, 0)
        failed += bool(warm.problems)
        report_problems(warm, "warm-up")
        llm.reset()
        llm.script(*llm_script(goals, args.agent_seconds))
        for i in range(args.runs):
            # The two modes take turns, the first one alternating, so a load change hits both alike.
            order = list(MODES.values()) if i % 2 == 0 else list(reversed(MODES.values()))
            for parallel in order:
                figures = await run_epic(bench, goals, parallel, args.repo_files, i + 1, args.agent_seconds)
                report_problems(figures, f"run {i + 1}")
                failed += bool(figures.problems)
                results.append(figures)
                print(f"  run {i + 1} {figures.mode:10} {figures.wall:6.2f} s wall, "
                      f"{figures.outside:5.2f} s outside the agents", flush=True)
    finally:
        await store.drain()
        await client.close()
        saver_client.close()
    return results, failed


def report_problems(figures: RunFigures, label: str) -> None:
    for problem in figures.problems:
        print(f"  WRONG ({label}, {figures.mode}): {problem}", file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each mode (default 3)")
    parser.add_argument("--agent-seconds", type=float, default=5.0, help="the agent's time per step (default 5)")
    parser.add_argument("--steps", type=int, default=1, help="code steps per goal (default 1)")
    parser.add_argument("--dependent", action="store_true", help="a third goal that depends on both")
    parser.add_argument("--repo-files", type=int, default=200, help="files in the workspace's repository")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="jervis-epic-waves-"))
    load = os.getloadavg()[0]
    with loopback(work) as stack:
        results, failed = asyncio.run(bench_runs(args, work, stack.mongo.url, stack.llm, stack.kb, stack.kotlin))
    goals = 3 if args.dependent else 2
    waves = 2 if args.dependent else 1
    print(f"epic: {goals} goals ({'two independent, a third on both' if args.dependent else 'independent'}), "
          f"{args.steps} step(s) each, the agent {args.agent_seconds:g} s a step; instant scripted LLM; "
          f"{args.repo_files} files in the repository; {os.cpu_count()} CPUs, load average {load:.2f} at the start")
    print(f"in-process graph, MongoDBSaver on nx-27017 (durability={DURABILITY!r}); {args.runs} runs per mode "
          f"after one warm-up, modes taking turns; work in {work}")
    medians: dict[str, float] = {}
    for mode, parallel in MODES.items():
        runs = [r for r in results if r.mode == mode]
        if not runs:
            continue
        walls = [r.wall for r in runs]
        medians[mode] = statistics.median(walls)
        agent_floor = args.agent_seconds * args.steps * (goals if parallel == 1 else waves)
        print(f"{mode:10} (epic_max_parallel_goals={parallel}): "
              f"{', '.join(f'{w:.2f}' for w in walls)} s; median {medians[mode]:.2f} s "
              f"(the agents' sleep alone: {agent_floor:g} s)")
        outside = statistics.median(r.outside for r in runs)
        split = ", ".join(f"{c} {statistics.median(r.split[c] for r in runs):.2f}" for c in (*CATEGORIES, "other"))
        print(f"  outside the agents: median {outside:.2f} s = {split} (s, medians)")
        print(f"  each agent run beyond its sleep (process start, entrypoint, result): median "
              f"{statistics.median(r.agent_extra for r in runs):.2f} s")
    if len(medians) == 2:
        ratio = medians["sequential"] / medians["parallel"]
        ideal = goals / waves
        print(f"speed-up sequential ÷ parallel: {ratio:.2f}× (agents' sleep alone: {ideal:.2f}×; "
              f"target ≥ {TARGET}× with two independent goals)")
    if failed:
        print(f"{failed} run(s) did wrong work: the figures above do not count", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
