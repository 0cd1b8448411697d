"""Recovery and verification end to end: the service process on both agent runners, nx-27017, the
scripted LLM, the fake Kotlin server, the scripted agent (which fails or succeeds per attempt).

Each scenario is one way a step can fail and what the run must then do: retry with the failure
in the new instructions, run the tests and feed their output back, retry after a review, stop
within the caps, skip, replan, inspect without changes, and end honestly with finished work
offered for commit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.llm_server import RecordedRequest, Reply
from tests.support import (
    approval,
    attempt_instructions,
    classification,
    file_block,
    git,
    goals_json,
    kotlin_rules,
    make_git_repo,
    new_task_id,
    node_marker,
    orchestrate_body,
    reflection,
    sse_events,
    steps_json,
    wait_until,
)

CALC = "def subtract(a, b):\n    return a - b"
#: Scenarios with nothing runner-specific run on the local runner only (the suite's time budget);
#: retries, test runs, caps and commits run on both.
LOCAL_ONLY = pytest.mark.parametrize("service", ["local"], indirect=True)
BUGGY_CALC = "def subtract(a, b):\n    return a + b"


@pytest.fixture
def client(service: Any) -> httpx.Client:
    with service.client() as http:
        # A scenario that failed may leave its run executing: the next one starts on a free slot.
        wait_until(lambda: not http.get("/health").json()["busy"], timeout=60, what="a free orchestration slot")
        yield http


@pytest.fixture
def workspace(data_root: Path) -> tuple[str, Path]:
    rel = f"clients/c1/{new_task_id()}"
    return rel, make_git_repo(data_root / rel)


def start(client: httpx.Client, body: dict[str, Any]) -> str:
    response = client.post("/orchestrate/stream", json=body)
    assert response.status_code == 200, response.text
    return response.json()["thread_id"]


def script(llm: Any, *, steps: str | Any, goals: str | None = None, extra: tuple[Reply, ...] = ()) -> None:
    """A code task, plus the rules a scenario adds (reflect, review…): a single task (intake, then its
    steps in one planning call), or with `goals` an epic (intake, goals, then each goal's steps).
    The requests of these scenarios name no file, so the model classifies and plans them."""
    category = ("epic", "code", "complex") if goals else ("single_task", "code", "simple")
    llm.script(
        Reply(match=node_marker("intake"), content=classification(*category), name="intake"),
        *([Reply(match=node_marker("plan_epic"), content=goals, name="plan_epic")] if goals else []),
        Reply(match=node_marker("plan_steps"), content=steps, name="plan_steps"),
        *extra,
    )


def interrupt_of(kotlin: Any, thread_id: str, action: str) -> dict[str, Any]:
    """The first `interrupted` status push of the thread with this action."""
    return wait_until(lambda: [s for s in kotlin.statuses if s["threadId"] == thread_id
                               and s["status"] == "interrupted" and s.get("interruptAction") == action],
                      what=f"a {action} question")[0]


def approve_commit(client: httpx.Client, kotlin: Any, thread_id: str, reason: str = "ano") -> dict[str, Any]:
    asked = interrupt_of(kotlin, thread_id, "commit")
    assert client.post(f"/approve/{thread_id}", json=approval(True, reason)).status_code == 200
    return asked


def committed_files(repo: Path, branch: str) -> list[str]:
    return git(repo, "show", "--name-only", "--format=", branch).split()


def prompts_of(llm: Any, name: str) -> list[str]:
    return [r.text for r in llm.requests if r.matched == name]


def agent_jobs(request: pytest.FixtureRequest, service: Any, task_id: str) -> list[str]:
    """Names of the agent Jobs of a task on the Kubernetes runner ([] on the local runner)."""
    if service.runner != "kubernetes":
        return []
    return [name for name in request.getfixturevalue("k8s").created if task_id in name]


# ------------------------------------------------------------------------------ retry
def test_step_failing_once_is_retried_with_the_failure_and_ends_with_one_commit(
        client, llm, kotlin, workspace, service, request) -> None:
    rel, repo = workspace
    steps = steps_json("\n".join([
        "@@FAIL @1 ImportError: cannot import name 'sub' from 'calc.ops' (wrong import path)",
        "@@FAIL @2 NameError: name 'sub' is not defined",
        file_block("broken.py @1", "from calc.ops import sub"),
        file_block("broken.py @2", "sub(1, 2)"),
        file_block("calc.py @3+", CALC),
    ]))
    script(llm, steps=steps)
    body = orchestrate_body(workspace_path=rel, query="Přidej funkci subtract do kalkulačky")
    thread_id = start(client, body)

    asked = approve_commit(client, kotlin, thread_id)
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    branch = f"task/{body['task_id']}"
    assert asked["interruptDescription"] == f"Commit 1 změněných souborů do větve '{branch}'"
    assert done["branch"] == branch and done["artifacts"] == ["calc.py"]
    assert committed_files(repo, branch) == ["calc.py"]
    assert git(repo, "rev-list", "--count", branch).strip() == "2"  # exactly one commit of the run
    assert not (repo / "broken.py").exists()  # the failed attempt's file was undone before the retry
    events = sse_events(client, thread_id)
    told = attempt_instructions(events)
    assert sorted(told) == [1, 2, 3]
    assert "Předchozí pokus 1 selhal" not in told[1]
    # early failures are retried with the failure itself: no reflection call (REFLECTION_FROM_ATTEMPT)
    assert "wrong import path" in told[2] and "Root cause" not in told[2]
    feedback = told[3].split("## Předchozí pokus 2 selhal", 1)[1]  # the retry's feedback: the latest failure
    assert "name 'sub' is not defined" in feedback and "wrong import path" not in feedback
    assert prompts_of(llm, "reflect") == []
    decisions = [data for _, kind, data in events if kind == "reflection"]
    assert [(d["action"], d["source"]) for d in decisions] == [("retry", "rule"), ("retry", "rule")]
    pushes = [p for p in kotlin.progress if p["taskId"] == body["task_id"]]
    reflect_push, retry_push = [p for p in pushes if p["node"] in ("reflect", "execute_step")][1:3]
    assert reflect_push["message"] == "Krok 1 neprošel, analyzuji příčinu…"
    runs = "aider" if service.runner == "kubernetes" else "aider → command"  # what runs the step, named last
    assert retry_push["message"] == ("Opakuji krok 1/1 cíle 1/1 (pokus 2): ImportError: cannot import name 'sub' "
                                     f"from 'calc.ops' (wrong import path) ({runs})")
    percents = [p["percent"] for p in pushes]
    assert percents == sorted(percents) and percents[-1] == 100.0 and 0 < percents[0] < 10
    assert client.get(f"/status/{thread_id}").json()["percent"] == "100"
    jobs = agent_jobs(request, service, body["task_id"])
    if service.runner == "kubernetes":  # every attempt its own Job, never the failed one again
        assert [n for n in jobs if "-g0-s0-a1-" in n] and [n for n in jobs if "-g0-s0-a2-" in n]
        assert len({n for n in jobs if "-g0-s0-" in n}) == 3


def test_failing_tests_are_fed_back_and_the_retry_passes(client, llm, kotlin, workspace) -> None:
    rel, repo = workspace
    (repo / "Makefile").write_text("test:\n\tpython3 check_calc.py\n")
    (repo / "check_calc.py").write_text(
        "from calc import subtract\nresult = subtract(5, 3)\n"
        "assert result == 2, f'subtract(5, 3) returned {result}, expected 2'\nprint('calc ok')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tests")
    steps = steps_json({"instructions": file_block("calc.py @1", BUGGY_CALC) + "\n" + file_block("calc.py @2+", CALC),
                        "step_type": "code", "files": ["calc.py"]})
    script(llm, steps=steps)
    body = orchestrate_body(workspace_path=rel, rules=kotlin_rules(require_tests=True))
    thread_id = start(client, body)

    approve_commit(client, kotlin, thread_id)
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert committed_files(repo, done["branch"]) == ["calc.py"]
    assert (repo / "calc.py").read_text() == CALC + "\n"
    told = attempt_instructions(sse_events(client, thread_id))
    # the first attempt knows what judges it (check_calc.py is no test file by name: the command is said)
    assert "Make the project's tests pass. The orchestrator runs `make test` after your change." in told[1]
    assert "subtract(5, 3) returned 8, expected 2" in told[2]  # the test output is the feedback
    assert "Testy selhaly (make test)" in told[2]
    assert "Your previous change is still in the files" in told[2]  # fixed in place, as a test loop would
    assert prompts_of(llm, "reflect") == []  # a first failure needs no reflection call


CHECK_CALC = ("from calc import subtract\nresult = subtract(5, 3)\n"
              "assert result == 2, f'subtract(5, 3) returned {result}, expected 2'\nprint('calc ok')\n")


def progress_messages(kotlin: Any, task_id: str) -> list[str]:
    return [p.get("message", "") for p in kotlin.progress if p.get("taskId") == task_id]


@LOCAL_ONLY
def test_require_tests_without_tests_asks_for_the_command_runs_it_and_remembers_it(client, llm, kotlin,
                                                                                   workspace) -> None:
    rel, repo = workspace
    (repo / "check_calc.py").write_text(CHECK_CALC)  # no test file by name, no build file: nothing to detect
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a check script")
    script(llm, steps=steps_json(file_block("calc.py", CALC)))
    body = orchestrate_body(workspace_path=rel, rules=kotlin_rules(require_tests=True))
    thread_id = start(client, body)

    asked = interrupt_of(kotlin, thread_id, "clarify")
    assert "nenašel jsem příkaz, který spouští testy" in asked["interruptDescription"]
    assert prompts_of(llm, "plan_steps") == []  # asked before any planning
    assert client.post(f"/approve/{thread_id}", json=approval(True, "Spouští se `python3 check_calc.py`")
                       ).status_code == 200
    approve_commit(client, kotlin, thread_id)
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert committed_files(repo, done["branch"]) == ["calc.py"]
    assert "Testy nebyly spuštěny" not in done["summary"]
    events = sse_events(client, thread_id)
    assert [data["command"] for _, kind, data in events if kind == "tests_start"] == ["python3 check_calc.py"]
    assert any("testy: python3 check_calc.py (vaše odpověď)" in m for m in progress_messages(kotlin, body["task_id"]))

    # the project's next run is not asked again: the answer was remembered
    script(llm, steps=steps_json(file_block("calc.py", CALC + "\n\n\ndef add(a, b):\n    return a + b")))
    again = orchestrate_body(workspace_path=rel, rules=kotlin_rules(require_tests=True))
    second = start(client, again)
    approve_commit(client, kotlin, second)
    kotlin.wait_for_status(thread_id=second, status="done")
    assert [s for s in kotlin.statuses if s["threadId"] == second and s.get("interruptAction") == "clarify"] == []
    assert any("testy: python3 check_calc.py (vaše odpověď z dřívějšího běhu" in m
               for m in progress_messages(kotlin, again["task_id"]))


@LOCAL_ONLY
def test_require_tests_without_tests_and_no_command_given_stops_before_any_change(client, llm, kotlin,
                                                                                  workspace) -> None:
    rel, repo = workspace
    script(llm, steps=steps_json(file_block("calc.py", CALC)))
    thread_id = start(client, orchestrate_body(workspace_path=rel, rules=kotlin_rules(require_tests=True)))

    interrupt_of(kotlin, thread_id, "clarify")
    assert client.post(f"/approve/{thread_id}", json=approval(True, "bez testů")).status_code == 200
    error = kotlin.wait_for_status(thread_id=thread_id, status="error")

    assert "Zastaveno před jakoukoli změnou" in error["error"]
    assert not (repo / "calc.py").exists()
    assert git(repo, "branch", "--list", "task/*").strip() == ""
    assert [kind for _, kind, _ in sse_events(client, thread_id) if kind in ("agent_log", "tests_start")] == []


@LOCAL_ONLY
def test_review_rejection_is_retried_with_the_issues(client, llm, kotlin, workspace) -> None:
    rel, repo = workspace
    documented = '"""Return a minus b."""'
    steps = steps_json(file_block("calc.py @1", CALC) + "\n"
                       + file_block("calc.py @2+", f"def subtract(a, b):\n    {documented}\n    return a - b"))
    rejected = json.dumps({"approved": False, "issues": ["subtract has no docstring"], "summary": "incomplete"})
    approved = json.dumps({"approved": True, "issues": [], "summary": "fine"})
    script(llm, steps=steps, extra=(
        Reply(match=node_marker("review"), name="review-1", content=rejected, times=1),
        Reply(match=node_marker("review"), name="review-2", content=approved),
        Reply(match=node_marker("reflect"), name="reflect", content=reflection("retry_modified", hint="add it")),
    ))
    thread_id = start(client, orchestrate_body(workspace_path=rel, rules=kotlin_rules(require_review=True)))

    approve_commit(client, kotlin, thread_id)
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert documented in (repo / "calc.py").read_text()
    assert "subtract has no docstring" in attempt_instructions(sse_events(client, thread_id))[2]
    first_review = next(r.text for r in llm.requests if r.matched == "review-1")
    assert "+def subtract(a, b):" in first_review  # the reviewer sees the step's diff
    assert done["artifacts"] == ["calc.py"]


@LOCAL_ONLY
def test_unreadable_review_is_a_warning_not_a_failure(client, llm, kotlin, workspace) -> None:
    rel, _ = workspace
    script(llm, steps=steps_json(file_block("calc.py", CALC)),
           extra=(Reply(match=node_marker("review"), name="review", content="Looks fine to me!"),))
    thread_id = start(client, orchestrate_body(workspace_path=rel, rules=kotlin_rules(require_review=True)))

    approve_commit(client, kotlin, thread_id)
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert "Review nedalo verdikt" in done["summary"]
    assert prompts_of(llm, "reflect") == []


# ------------------------------------------------------------------------------ caps
def test_always_failing_step_stops_within_the_caps_after_asking_once(client, llm, kotlin, workspace) -> None:
    rel, repo = workspace
    script(llm, steps=steps_json("@@FAIL the build server is unreachable"),
           extra=(Reply(match=node_marker("reflect"), name="reflect", content=reflection("retry")),))
    thread_id = start(client, orchestrate_body(workspace_path=rel))

    asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
    assert asked["interruptAction"] == "clarify"
    assert "neprošel ani na 3. pokus" in asked["interruptDescription"]
    assert "Vyčerpal jsem všech 3 pokusů o tento krok." in asked["interruptDescription"]
    client.post(f"/approve/{thread_id}", json=approval(True, "zkus to znovu, server už běží"))
    error = kotlin.wait_for_status(thread_id=thread_id, status="error")

    assert error["error"].startswith("Krok 1 cíle 1 neprošel ani po 4 pokusech: the build server is unreachable")
    told = attempt_instructions(sse_events(client, thread_id))
    assert sorted(told) == [1, 2, 3, 4]  # three attempts, the one the user granted, and no more
    assert "server už běží" in told[4]
    assert [s["interruptAction"] for s in kotlin.statuses if s["threadId"] == thread_id
            and s["status"] == "interrupted"] == ["clarify"]
    assert git(repo, "branch", "--list", "task/*").strip() == ""
    status = client.get(f"/status/{thread_id}").json()
    assert status["status"] == "error" and "Zbývá:" in status["report"]


@LOCAL_ONLY
def test_asked_user_answering_skip_skips_the_step_and_the_report_names_it(client, llm, kotlin, workspace) -> None:
    rel, repo = workspace
    steps = steps_json("@@FAIL the linter is not installed", file_block("b.py", "b = 2"))
    script(llm, steps=steps, extra=(Reply(match=node_marker("reflect"), name="reflect",
                                          content=reflection("ask_user", root_cause="missing linter")),))
    body = orchestrate_body(workspace_path=rel)
    thread_id = start(client, body)

    asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
    assert asked["interruptAction"] == "clarify" and "missing linter" in asked["interruptDescription"]
    client.post(f"/approve/{thread_id}", json=approval(True, "přeskoč"))
    approve_commit(client, kotlin, thread_id)
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert committed_files(repo, done["branch"]) == ["b.py"]
    assert "Přeskočené kroky: 1.1 @@FAIL the linter is not installed (the linter is not installed)" \
        in done["summary"]


@LOCAL_ONLY
def test_replan_keeps_the_finished_goal(client, llm, kotlin, workspace) -> None:
    rel, repo = workspace

    failing = "Use the API client\n@@FAIL the api module has no client"
    script(llm, steps=steps_json(file_block("a.py", "a = 1"), failing),
           extra=(Reply(match=node_marker("reflect"), name="reflect", content=reflection("replanning")),
                  Reply(match=node_marker("replan"), name="replan", content=steps_json(file_block("b.py", "b = 2")))))
    thread_id = start(client, orchestrate_body(workspace_path=rel))

    approve_commit(client, kotlin, thread_id)
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert sorted(committed_files(repo, done["branch"])) == ["a.py", "b.py"]
    [replanned] = prompts_of(llm, "replan")
    assert "the api module has no client" in replanned and "## Steps already done\n- <<<FILE a.py" in replanned
    assert len(prompts_of(llm, "plan_steps")) == 1  # the finished step was not planned (or done) again


@LOCAL_ONLY
def test_inspect_step_without_changes_passes_and_hands_its_findings_on(client, llm, kotlin, workspace) -> None:
    rel, repo = workspace
    inspect = {"instructions": "Find the routes.\n@@SUMMARY routes found: /orders, /users", "step_type": "code",
               "files": [], "expects_changes": False}
    script(llm, steps=steps_json(inspect, file_block("routes.md", "# Routes")))
    thread_id = start(client, orchestrate_body(workspace_path=rel))

    approve_commit(client, kotlin, thread_id)
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert committed_files(repo, done["branch"]) == ["routes.md"]
    told = attempt_instructions(sse_events(client, thread_id))[1]  # both steps ran at their first attempt
    second = told.split("# Task")[2]
    assert "routes found: /orders, /users" in second and "Findings of earlier steps" in second


# ------------------------------------------------------------------------------ honest endings
def test_failure_after_a_finished_goal_offers_its_commit_and_reports_it(client, llm, kotlin, workspace) -> None:
    rel, repo = workspace

    def steps(request: RecordedRequest) -> str:
        if "## Goal\nGoal A" in request.last_user:
            return steps_json(file_block("a.py", "a = 1"))
        return steps_json("@@FAIL the database is read-only")

    script(llm, goals=goals_json("Goal A", "Goal B"), steps=steps,
           extra=(Reply(match=node_marker("reflect"), name="reflect", content=reflection("ask_user")),))
    body = orchestrate_body(workspace_path=rel)
    thread_id = start(client, body)

    plan = interrupt_of(kotlin, thread_id, "epic_plan")
    assert "Goal A" in plan["interruptDescription"]
    client.post(f"/approve/{thread_id}", json=approval(True, "ano"))
    interrupt_of(kotlin, thread_id, "clarify")
    client.post(f"/approve/{thread_id}", json=approval(True, "stop"))
    offered = interrupt_of(kotlin, thread_id, "commit")
    assert offered["interruptDescription"].startswith("Úloha nebyla dokončena (Uživatel ukončil práci")
    client.post(f"/approve/{thread_id}", json=approval(True, "ano"))
    error = kotlin.wait_for_status(thread_id=thread_id, status="error")

    branch = f"task/{body['task_id']}"
    sha = git(repo, "rev-parse", branch).strip()
    assert committed_files(repo, branch) == ["a.py"]
    text = error["error"]
    assert text.startswith("Uživatel ukončil práci po selhání kroku 1 cíle 2: the database is read-only")
    assert "Hotové cíle: Goal A." in text and f"Větev {branch}, commit {sha[:12]}." in text
    assert "Zbývá: @@FAIL the database is read-only" in text
    assert error["branch"] == branch and error["artifacts"] == ["a.py"]
    status = client.get(f"/status/{thread_id}").json()
    assert status["error"] == text and "Selhalo: 2.1" in status["report"]


# ------------------------------------------------------------------------------ approvals
@LOCAL_ONLY
def test_approval_with_a_branch_condition_commits_elsewhere(client, llm, kotlin, workspace) -> None:
    rel, repo = workspace
    script(llm, steps=steps_json(file_block("calc.py", CALC)))
    body = orchestrate_body(workspace_path=rel, rules=kotlin_rules(branch_naming="master",
                                                                   allowed_branches=["master", "task/*"]))
    thread_id = start(client, body)

    asked = approve_commit(client, kotlin, thread_id, "ano, ale ne do mastera")
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert "'master'" in asked["interruptDescription"]
    assert done["branch"] == f"task/{body['task_id']}"
    assert git(repo, "branch", "--list", "master").strip() == ""
    assert "Podmínky uživatele: ne do mastera" in done["summary"]


@LOCAL_ONLY
def test_approval_with_added_work_runs_one_more_step_then_commits_without_asking_again(
        client, llm, kotlin, workspace) -> None:
    rel, repo = workspace
    script(llm, steps=steps_json(file_block("calc.py", CALC)))
    thread_id = start(client, orchestrate_body(workspace_path=rel))

    answer = "ano, ale přidej testy\n" + file_block("test_calc.py", "from calc import subtract")
    approve_commit(client, kotlin, thread_id, answer)
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert sorted(committed_files(repo, done["branch"])) == ["calc.py", "test_calc.py"]
    commit_asks = [s for s in kotlin.statuses if s["threadId"] == thread_id and s["status"] == "interrupted"]
    assert len(commit_asks) == 1


@LOCAL_ONLY
def test_answer_without_yes_or_no_is_read_by_the_llm(client, llm, kotlin, workspace) -> None:
    rel, repo = workspace
    script(llm, steps=steps_json(file_block("calc.py", CALC)), extra=(Reply(
        match=node_marker("interpret_approval"), name="interpret",
        content=json.dumps({"approved": True, "modification": "do větve fix/calc", "reason": None})),))
    thread_id = start(client, orchestrate_body(workspace_path=rel))

    approve_commit(client, kotlin, thread_id, "dej to do větve fix/calc")
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert done["branch"] == "fix/calc" and committed_files(repo, "fix/calc") == ["calc.py"]
    assert "dej to do větve fix/calc" in prompts_of(llm, "interpret")[0]


@LOCAL_ONLY
def test_plan_refused_with_a_reason_is_replanned_and_asked_again(client, llm, kotlin) -> None:
    def answer(request: RecordedRequest) -> str:
        return request.last_user.split("## Step\n", 1)[1].split("\n", 1)[0] + " hotovo."

    llm.script(
        Reply(match=node_marker("intake"), content=classification("epic", "code", "complex"), name="intake"),
        Reply(match=node_marker("plan_epic"), content=goals_json("Přidat knihovnu requests", "API klient")),
        Reply(match=node_marker("replan"), name="replan", content=goals_json("API klient nad urllib")),
        Reply(match=node_marker("plan_steps"), content=json.dumps({"steps": [
            {"instructions": "Popiš klienta", "step_type": "respond"}]})),
        Reply(match=node_marker("execute_step"), content=answer),
        Reply(match=node_marker("finalize"), content="Epic hotov."),
    )
    thread_id = start(client, orchestrate_body(query="Udělej API klienta"))

    first = kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
    assert first["interruptAction"] == "epic_plan" and "Přidat knihovnu requests" in first["interruptDescription"]
    client.post(f"/approve/{thread_id}", json=approval(False, "ne, udělej to bez nové závislosti"))
    again = wait_until(lambda: [s for s in kotlin.statuses if s["threadId"] == thread_id
                                and s["status"] == "interrupted"][1:], what="the second plan question")[0]
    assert again["interruptAction"] == "epic_plan"
    assert again["interruptDescription"].startswith("Přeplánováno (udělej to bez nové závislosti)")
    assert "API klient nad urllib" in again["interruptDescription"]
    client.post(f"/approve/{thread_id}", json=approval(True, "ano"))
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert "bez nové závislosti" in prompts_of(llm, "replan")[0]
    assert "Podmínky uživatele: udělej to bez nové závislosti" in done["summary"]
