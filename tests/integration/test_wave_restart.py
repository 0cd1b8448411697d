"""kill -9 of the real service while a wave of goals runs side by side (app/graph/nodes/run_goal.py):
the restarted service (same nx-27017, same POD_ID: it adopts at once) keeps a goal that had finished,
re-attaches to the agent of a goal that was still working, then goes on with the next wave.

The local runner drives the scripted agent through a small shell wrapper beside the workspace:
it appends which file the step writes (`Write alpha.py`…) to `starts.txt` before it execs the agent
(the count of agent starts per goal), and a step told `HOLD-UNTIL-RELEASED` waits for the test's
`release` file first (at most 60 s), so the agent is still running when the restarted service looks
for it, however slow the restart.
"""

from __future__ import annotations

import json
import shlex
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pymongo import MongoClient

from app.agents.local_process import RECORD_FILE, RUNS_DIR
from app.graph.rules.waves import goal_branch, worktree_path
from tests.fixtures.llm_server import RecordedRequest, Reply
from tests.fixtures.service import ServiceProcess
from tests.support import (
    SCRIPTED_AGENT,
    approval,
    classification,
    file_block,
    git,
    make_git_repo,
    new_task_id,
    node_marker,
    orchestrate_body,
    pid_alive,
    wait_until,
)

pytestmark = pytest.mark.slow

ALPHA, BETA, GAMMA = "Add alpha", "Add beta", "Add gamma"
FILES = {ALPHA: ("alpha.py", "def alpha():\n    return 1\n"),
         BETA: ("beta.py", "from alpha import alpha\n\n\ndef beta():\n    return alpha() + 1\n"),
         GAMMA: ("gamma.py", "def gamma():\n    return 3\n")}
A = {"id": "a", "title": ALPHA, "dependencies": []}
B = {"id": "b", "title": BETA, "dependencies": ["a"]}
C = {"id": "c", "title": GAMMA, "dependencies": []}
APPROVED = json.dumps({"approved": True, "issues": [], "summary": "All goals are done."})
#: A step's line that makes the wrapper wait for the test's release file before the agent starts.
HOLD = "HOLD-UNTIL-RELEASED"
#: Goal indexes once the plan is approved (plan order: wave 1 = alpha, gamma; wave 2 = beta).
INDEX = {ALPHA: 0, GAMMA: 1, BETA: 2}


def goal_of(request: RecordedRequest) -> str:
    """The goal title a plan_steps request is about."""
    return request.last_user.split("## Goal\n", 1)[1].split("\n", 1)[0]


def epic_script(goals: list[dict[str, Any]], sleeps: dict[str, float | None]) -> list[Reply]:
    """An epic of `goals`, each goal one code step whose agent sleeps (None: is held until the test
    releases it), then writes the goal's file."""
    def steps(request: RecordedRequest) -> str:
        title = goal_of(request)
        path, content = FILES[title]
        wait = HOLD if sleeps[title] is None else f"@@SLEEP {sleeps[title]}"
        return json.dumps({"steps": [{"instructions": f"Write {path}\n{wait}\n{file_block(path, content)}",
                                      "step_type": "code", "files": [path]}]})
    return [Reply(match=node_marker("intake"), content=classification("epic", "code", "complex"), name="intake"),
            Reply(match=node_marker("plan_epic"), content=json.dumps({"goals": goals}), name="plan_epic"),
            Reply(match=node_marker("plan_steps"), content=steps, name="plan_steps"),
            Reply(match=node_marker("review_epic"), content=APPROVED, name="review")]


class Wave:
    """One epic's run on a git workspace under DATA_ROOT, and what can be seen of it from outside."""

    def __init__(self, data_root: Path) -> None:
        self.data_root = data_root
        self.rel = f"clients/c1/{new_task_id()}/repo"
        self.repo = make_git_repo(data_root / self.rel)
        self.starts = self.repo.parent / "starts.txt"  # beside the workspace, outside git
        self.release = self.repo.parent / "release"
        self.thread_id = ""
        self.task_id = ""

    def agent_command(self) -> str:
        """The scripted agent, after noting which file its step writes (one line per agent start)
        and, for a held step, waiting for the release."""
        note = f"grep -m1 -o 'Write [a-z]*[.]py' .jervis/instructions.md >> {shlex.quote(str(self.starts))}"
        hold = (f"if grep -q {HOLD} .jervis/instructions.md; then for i in $(seq 600); do "
                f"[ -e {shlex.quote(str(self.release))} ] && break; sleep 0.1; done; fi")
        return json.dumps(["sh", "-c", f"{note}; {hold}; exec {shlex.join(SCRIPTED_AGENT)}"])

    def started(self) -> list[str]:
        """The files of the agents started so far, in start order."""
        lines = self.starts.read_text().splitlines() if self.starts.exists() else []
        return [line.split()[-1] for line in lines if line.strip()]

    def worktree(self, title: str) -> Path:
        return self.data_root / worktree_path(self.rel, self.thread_id, INDEX[title])

    def agent_pids(self, title: str) -> list[int]:
        """Pids of the goal's agents (recorded in the service's folder of agent runs) that still run."""
        runs = self.data_root / RUNS_DIR
        records = [json.loads(p.read_text()) for p in runs.glob(f"*/{RECORD_FILE}")] if runs.is_dir() else []
        worktree = str(self.worktree(title))
        return [r["pid"] for r in records if r["workspace"] == worktree and pid_alive(r["pid"])]

    def start(self, client: httpx.Client) -> None:
        body = orchestrate_body(workspace_path=self.rel, query="Build alpha, beta and gamma")
        response = client.post("/orchestrate/stream", json=body)
        assert response.status_code == 200, response.text
        self.thread_id, self.task_id = response.json()["thread_id"], body["task_id"]


@pytest.fixture
def wave(data_root: Path) -> Iterator[Wave]:
    run = Wave(data_root)
    yield run
    run.release.touch()  # a test that failed leaves no agent waiting


def service_for(service_factory: Callable[..., ServiceProcess], wave: Wave) -> ServiceProcess:
    return service_factory(pod_id=f"waves-{uuid.uuid4().hex[:8]}", epic_max_parallel_goals=2,
                           response_language="en", local_agent_command=wave.agent_command(),
                           agent_sandbox_writable=json.dumps([str(wave.repo.parent)]))  # starts.txt and the release


def answer(client: httpx.Client, kotlin: Any, thread_id: str, action: str, timeout: float = 30) -> None:
    """Approve the run's question `action` once it has been asked."""
    kotlin.wait_until(lambda: next((s for s in kotlin.statuses if s["threadId"] == thread_id
                                    and s["status"] == "interrupted" and s.get("interruptAction") == action), None),
                      timeout, lambda: f"a {action} question of {thread_id}:\n{kotlin.describe()}")
    response = client.post(f"/approve/{thread_id}", json=approval(True, "yes"))
    assert response.status_code == 200, response.text


def finished_goal_writes(mongo_url: str, service: ServiceProcess, thread_id: str) -> int:
    """How many goals of the wave have their end durably recorded: the run's own checkpoint
    namespace holds a `wave_goals` write only once a `run_goal` task has returned."""
    with MongoClient(mongo_url) as mongo:
        writes = mongo[service.env["CHECKPOINT_DATABASE"]]["checkpoint_writes"]
        return writes.count_documents({"thread_id": thread_id, "checkpoint_ns": "", "channel": "wave_goals"})


def plan_steps_asked(llm: Any) -> list[str]:
    return [goal_of(r) for r in llm.requests if r.matched == "plan_steps"]


def reattached(service: ServiceProcess) -> list[str]:
    """Job names of the agents the service re-attached to."""
    return [line.split("re-attaching to agent ", 1)[1].split()[0]
            for line in service.log_path.read_text(errors="replace").splitlines() if "re-attaching to agent " in line]


def finish(service: ServiceProcess, kotlin: Any, wave: Wave) -> dict[str, Any]:
    """Approve the commit gate; the run's `done` status."""
    with service.client() as client:
        answer(client, kotlin, wave.thread_id, "commit", timeout=40)
        done = kotlin.wait_for_status(thread_id=wave.thread_id, status="done", timeout=30)
        assert client.get(f"/status/{wave.thread_id}").json()["status"] == "done"
    return done


def assert_committed_and_clean(wave: Wave, done: dict[str, Any], titles: list[str]) -> None:
    """One commit per goal on the task's branch (titled by the goal, holding its file); every goal's
    file in the workspace; no worktree, goal branch or worktree directory left."""
    branch = done["branch"]
    assert branch == f"task/{wave.task_id}"
    log = git(wave.repo, "log", "--format=%H %s", f"main..{branch}").splitlines()
    commits = {subject: sha for sha, subject in (line.split(" ", 1) for line in log)}
    assert len(log) == len(titles), log
    for title in titles:
        subject = next((s for s in commits if title in s), None)
        assert subject is not None, f"no commit of {title!r}: {log}"
        path, content = FILES[title]
        assert git(wave.repo, "show", "--name-only", "--format=", commits[subject]).split() == [path]
        assert (wave.repo / path).read_text().strip() == content.strip()
    assert git(wave.repo, "worktree", "list").strip().count("\n") == 0, git(wave.repo, "worktree", "list")
    assert "jervis/goals" not in git(wave.repo, "branch", "--list", "--all")
    assert git(wave.repo, "branch", "--list", goal_branch(wave.thread_id, 0)) == ""
    assert not any(wave.worktree(title).exists() for title in titles if title != BETA)


def test_kill_after_one_goal_of_the_wave_ended_keeps_it_and_reattaches_to_the_other(
        service_factory, llm, kotlin, mongo_server, wave: Wave) -> None:
    """Epic [alpha, beta after alpha, gamma]: wave 1 runs alpha (1 s) and gamma (held) side by side.
    The service is killed once alpha's goal has durably ended while gamma's agent still works; the
    restarted service does not run alpha again, re-attaches to gamma's agent, then runs beta."""
    llm.script(*epic_script([A, B, C], {ALPHA: 1, GAMMA: None, BETA: 0.2}))
    first = service_for(service_factory, wave).start()
    with first.client() as client:
        wave.start(client)
        answer(client, kotlin, wave.thread_id, "epic_plan")
    wait_until(lambda: finished_goal_writes(mongo_server.url, first, wave.thread_id) == 1, timeout=30,
               what="alpha's goal to end (its run_goal write in the checkpoint)")
    gamma_agent = wave.agent_pids(GAMMA)
    assert gamma_agent, "gamma's agent does not run"
    assert (wave.worktree(ALPHA) / "alpha.py").exists() and not wave.agent_pids(ALPHA)
    first.kill()
    killed_at = time.time()
    before = wave.started()
    assert sorted(before) == ["alpha.py", "gamma.py"], before
    assert pid_alive(gamma_agent[0])  # the agent outlives the service

    restarted = service_factory(env=first.env).start()
    again = wait_until(lambda: reattached(restarted), what="the re-attach to gamma's agent")
    wave.release.touch()
    done = finish(restarted, kotlin, wave)

    started = wave.started()
    assert sorted(started) == ["alpha.py", "beta.py", "gamma.py"], started  # each agent started once…
    assert started[-1] == "beta.py"  # …beta's after the restart
    asked = plan_steps_asked(llm)
    assert sorted(asked) == [ALPHA, BETA, GAMMA], asked  # alpha and gamma not planned again
    beta_asked = next(r.received_at for r in llm.requests if r.matched == "plan_steps" and goal_of(r) == BETA)
    assert beta_asked > killed_at
    assert reattached(restarted) == again and len(again) == 1, again
    assert f"-g{INDEX[GAMMA]}-s0-a1-" in again[0], again  # gamma's first attempt, followed on
    assert reattached(first) == []
    assert_committed_and_clean(wave, done, [ALPHA, GAMMA, BETA])


def test_kill_while_both_agents_of_the_wave_run_reattaches_to_both(
        service_factory, llm, kotlin, mongo_server, wave: Wave) -> None:
    """Epic [alpha, gamma], one wave: killed while both agents work (held); the restarted service
    re-attaches to both, neither step starts again."""
    llm.script(*epic_script([A, C], {ALPHA: None, GAMMA: None}))
    first = service_for(service_factory, wave).start()
    with first.client() as client:
        wave.start(client)
        answer(client, kotlin, wave.thread_id, "epic_plan")
    wait_until(lambda: wave.agent_pids(ALPHA) and wave.agent_pids(GAMMA), timeout=30, what="both agents to run")
    first.kill()
    assert finished_goal_writes(mongo_server.url, first, wave.thread_id) == 0

    restarted = service_factory(env=first.env).start()
    again = wait_until(lambda: len(reattached(restarted)) == 2 and reattached(restarted), what="both re-attaches")
    wave.release.touch()
    done = finish(restarted, kotlin, wave)

    assert sorted(wave.started()) == ["alpha.py", "gamma.py"]
    assert sorted(plan_steps_asked(llm)) == [ALPHA, GAMMA]
    assert all(any(f"-g{i}-s0-a1-" in name for name in again) for i in (0, 1)), again
    assert len(reattached(restarted)) == 2
    assert_committed_and_clean(wave, done, [ALPHA, GAMMA])
