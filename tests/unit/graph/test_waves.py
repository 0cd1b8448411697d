"""Goals of one wave side by side (app/graph/nodes/select_goal.py, run_goal.py, merge_wave.py),
in-process with the scripted LLM and the scripted agent on a real git workspace: the independent
goals of an epic [A, B after A, C] run at the same time, each in its own worktree, B after both;
their work is merged in plan order; a goal that conflicts runs again on its own on the merged result."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pytest
from langgraph.runtime import Runtime
from langgraph.types import Command

from app.agents.base import AgentJob, AgentResult, AgentRunner, LogSink, Prepare
from app.graph.context import RunContext
from app.graph.nodes.replan import replan
from app.observability.metrics import Metrics
from app.runs.events import EventHub
from app.runs.lifecycle import RunDriver, RunIdentity, RunProgress
from tests.fixtures.llm_server import RecordedRequest, Reply
from tests.support import classification, file_block, git, make_git_repo, node_marker
from tests.unit.graph.graph_support import nodes_of, start

pytestmark = pytest.mark.settings(epic_max_parallel_goals=2, response_language="en")

YES = {"approved": True, "reason": "yes", "modification": None}
APPROVED = json.dumps({"approved": True, "issues": [], "summary": "All three goals are done."})


class RecordingRunner:
    """The real runner, with when each agent (not test or git) run started and ended, per goal."""

    def __init__(self, runner: AgentRunner) -> None:
        self._runner = runner
        self.runs: list[tuple[int, str, float, float]] = []  # goal index, workspace, start, end

    def program(self, agent_type: str) -> str:
        return self._runner.program(agent_type)

    async def run(self, job: AgentJob, *, prepare: Prepare, on_log: LogSink | None = None) -> AgentResult:
        began = time.monotonic()
        result = await self._runner.run(job, prepare=prepare, on_log=on_log)
        if job.mode == "agent":
            self.runs.append((job.goal_index, str(job.workspace), began, time.monotonic()))
        return result

    def span(self, goal_index: int) -> tuple[float, float]:
        spans = [(s, e) for g, _, s, e in self.runs if g == goal_index]
        return min(s for s, _ in spans), max(e for _, e in spans)


def plan(goals: list[dict[str, Any]], files: dict[str, tuple[str, str]], sleep: float = 1.0) -> list[Reply]:
    def steps(request: RecordedRequest) -> str:
        title = request.last_user.split("## Goal\n", 1)[1].split("\n", 1)[0]
        path, content = files[title]
        return json.dumps({"steps": [{"instructions": f"Write {path}\n@@SLEEP {sleep}\n{file_block(path, content)}",
                                      "step_type": "code", "files": [path]}]})
    return [Reply(match=node_marker("intake"), content=classification("epic", "code", "complex"), name="intake"),
            Reply(match=node_marker("plan_epic"), content=json.dumps({"goals": goals}), name="plan_epic"),
            Reply(match=node_marker("plan_steps"), content=steps, name="plan_steps"),
            Reply(match=node_marker("review_epic"), content=APPROVED, name="review")]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_git_repo(tmp_path / "clients/c1/waves")


@pytest.fixture
def recording(ctx: RunContext) -> RecordingRunner:
    return RecordingRunner(ctx.runner)


@pytest.fixture
def wave_ctx(ctx: RunContext, recording: RecordingRunner) -> RunContext:
    return dataclasses.replace(ctx, runner=recording)


async def run_epic(graph: Any, ctx: RunContext, query: str) -> tuple[dict[str, Any], list[str], str]:
    """Approve the plan, run to the commit gate, approve the commit: final state, nodes, commit gate text."""
    state, config = start(query, workspace_path="clients/c1/waves")
    await graph.ainvoke(state, config, context=ctx)
    nodes = await nodes_of(graph, Command(resume=YES), config, ctx)
    snapshot = await graph.aget_state(config)
    assert snapshot.next == ("git_operations",), nodes
    gate = snapshot.tasks[0].interrupts[0].value["description"]
    await graph.ainvoke(Command(resume=YES), config, context=ctx)
    return (await graph.aget_state(config)).values, nodes, gate


GOALS = [{"id": "a", "title": "Add alpha", "dependencies": []},
         {"id": "b", "title": "Add beta", "dependencies": ["a"]},
         {"id": "c", "title": "Add gamma", "dependencies": []}]
FILES = {"Add alpha": ("alpha.py", "def alpha():\n    return 1\n"),
         "Add beta": ("beta.py", "from alpha import alpha\n\n\ndef beta():\n    return alpha() + 1\n"),
         "Add gamma": ("gamma.py", "def gamma():\n    return 3\n")}


async def test_independent_goals_run_side_by_side_and_the_dependent_one_after_both(
        graph: Any, wave_ctx: RunContext, recording: RecordingRunner, llm: Any, workspace: Path) -> None:
    llm.script(*plan(GOALS, FILES))

    final, nodes, gate = await run_epic(graph, wave_ctx, "Build alpha, beta and gamma")

    a, b, c = recording.span(0), recording.span(2), recording.span(1)  # run order: a, c (wave 1), b (wave 2)
    assert [g["id"] for g in final["goals"]] == ["a", "c", "b"]
    assert a[0] < c[1] and c[0] < a[1], "a and c did not overlap"
    assert b[0] >= max(a[1], c[1]), "b started before a and c had ended"
    worktrees = {w for g, w, _, _ in recording.runs if g in (0, 1)}
    assert len(worktrees) == 2 and all(".jervis-goals" in w for w in worktrees)  # each in its own worktree
    assert nodes.count("run_goal") == 2 and nodes.count("merge_wave") == 1 and "review_epic" in nodes
    alpha = next(r.last_user for r in llm.requests if r.matched == "plan_steps" and "## Goal\nAdd alpha" in r.last_user)
    assert "## Other goals (planned separately: not part of this goal's steps)\n- Add gamma\n- Add beta" in alpha
    for path, content in FILES.values():
        assert (workspace / path).read_text().strip() == content.strip()
    assert [s["goal_id"] for s in final["goal_summaries"]] == ["a", "c", "b"]
    assert all(s.get("tree") for s in final["goal_summaries"])
    assert "1. Add alpha: alpha.py" in gate and "3. Add beta: beta.py" in gate
    # no worktree or goal branch is left behind
    assert git(workspace, "worktree", "list").strip().count("\n") == 0
    assert "jervis/goals" not in git(workspace, "branch", "--list")
    assert not workspace.with_name("waves.jervis-goals").exists()
    # one commit per goal, titled by the goal, in the order the goals were done
    log = git(workspace, "log", "--format=%s", "-n", "3").splitlines()
    assert [line.split(" ", 1)[1] for line in log] == ["Add beta", "Add gamma", "Add alpha"], log
    assert final["git_outcome"] == "committed"
    assert git(workspace, "show", "--format=", "--name-only", "HEAD~2").split() == ["alpha.py"]


# Each goal names one file: it is one step, the goal itself, with no planning call.
CONFLICTING = [{"id": "a", "title": "Add alpha to shared.py", "dependencies": [],
                "description": "@@SLEEP 0.2\n" + file_block("shared.py", "VALUE = 'alpha'")},
               {"id": "c", "title": "Add gamma to shared.py", "dependencies": [],
                "description": "@@SLEEP 0.2\n" + file_block("shared.py", "VALUE = 'gamma'")}]


async def test_a_goal_that_conflicts_in_its_wave_runs_again_alone_on_the_merged_result(
        graph: Any, wave_ctx: RunContext, recording: RecordingRunner, llm: Any, workspace: Path) -> None:
    llm.script(*plan(CONFLICTING, {}))

    final, nodes, _ = await run_epic(graph, wave_ctx, "Build alpha and gamma")

    records = [(r["goal_id"], r["status"]) for r in final["wave_goals"]]
    assert ("a", "merged") in records and ("c", "conflict") in records and ("c", "alone") in records
    conflict = next(r for r in final["wave_goals"] if r["status"] == "conflict")
    assert "shared.py" in conflict["reason"] and "Add alpha" in conflict["reason"]
    assert final["goals"][1]["description"].endswith(
        "Its change conflicted with goals merged before it (shared.py, also changed by: Add alpha to shared.py); "
        "do it again on top of the current code.")
    assert "plan_steps" not in [r.matched for r in llm.requests]
    again = [w for g, w, _, _ in recording.runs if g == 1]
    assert len(again) == 2 and ".jervis-goals" in again[0] and again[1] == str(workspace)  # the re-run: alone
    assert (workspace / "shared.py").read_text().strip() == "VALUE = 'gamma'"  # on top of alpha's merged change
    assert [s["goal_id"] for s in final["goal_summaries"]] == ["a", "c"]
    assert "Merged after a re-run (conflicts between goals of one wave): Add gamma to shared.py." in final[
        "final_result"]
    assert nodes.index("merge_wave") < nodes.index("plan_steps", nodes.index("merge_wave"))


async def test_progress_names_the_goals_running_side_by_side_and_every_goals_state(
        graph: Any, wave_ctx: RunContext, llm: Any, workspace: Path) -> None:
    llm.script(*plan(GOALS, FILES, sleep=0.5))
    state, config = start("Build alpha, beta and gamma", workspace_path="clients/c1/waves")
    run = RunIdentity(config["configurable"]["thread_id"], state["task"]["id"], state["task"]["client_id"])
    driver = RunDriver(graph, wave_ctx, wave_ctx.kotlin, Metrics())
    hub = EventHub()
    progress = RunProgress()

    assert (await driver.drive(run, state, hub.log(run.thread_id), run_progress=progress)).status == "interrupted"
    outcome = await driver.drive(run, Command(resume=YES), hub.log(run.thread_id), run_progress=progress)

    assert outcome.interrupt_action == "commit"
    starts = [e.data for e in hub.log(run.thread_id).events if e.type == "node_start"]
    in_goals = [s for s in starts if "goal_id" in s]
    assert {s["goal_id"] for s in in_goals} == {"a", "c"}  # b ran alone, in the run's own loop
    alpha = next(s for s in in_goals if s["goal_id"] == "a" and s["node"] == "execute_step")
    assert alpha["message"] == "Add alpha: Running step 1/1 of goal 1/3…"
    assert "1. Add alpha: running (execute_step, step 1/1)" in alpha["goals"]
    assert "3. Add beta: waiting" in alpha["goals"]
    run_goal = next(s for s in starts if s["node"] == "run_goal")
    assert run_goal["message"] == "Working on goals side by side: Add alpha, Add gamma…"
    late = next(s for s in starts if s["node"] == "plan_steps" and "goal_id" not in s)  # b's goal, after the wave
    assert late["goals"].startswith("1. Add alpha: done; 2. Add gamma: done; 3. Add beta: running (plan_steps")
    percents = [s["percent"] for s in starts]
    assert percents == sorted(percents) and 10 < max(s["percent"] for s in in_goals) < 90


async def test_an_epic_replanned_after_its_wave_keeps_every_finished_goal(ctx: RunContext, llm: Any) -> None:
    """a failed beside c, which finished: the replan at a keeps c (not only the goals before a)."""
    llm.script(Reply(match=node_marker("replan"), content=json.dumps(
        {"goals": [{"id": "c", "title": "Add alpha differently", "dependencies": []}]}), name="replan"))
    state = {**start("Build alpha and gamma")[0], "task_category": "epic", "current_goal_index": 0,
             "goals": [GOALS[0], GOALS[2]], "goal_summaries": [{"goal_id": "c", "title": "Add gamma", "summary": "ok",
                                                              "changed_files": ["gamma.py"], "key_decisions": []}],
             "recovery": {"action": "replanning", "failure": "alpha failed twice", "source": "llm"}}

    update = await replan(state, Runtime(context=ctx))  # type: ignore[arg-type]

    assert [g["id"] for g in update["goals"]] == ["c", "c-r1"]  # the new goal never takes a finished one's id
    assert update["current_goal_index"] == 1
    asked = next(r.last_user for r in llm.requests if r.matched == "replan")
    assert "Add gamma: ok" in asked
