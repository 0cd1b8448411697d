"""Every answer a person can type to a question or gate brings the ending that answer means.

Every interrupt the graph raises gets free text, sent exactly as Kotlin sends it
(`app.cli.wire.approval_body`): a plain yes or no in Czech and English, an instruction, an empty
answer, and unrelated questions (one of them, "yesterday", carries Kotlin's approval flag, which
only looks for "yes" inside the text). Where the service asks the LLM to read the answer
(`interpret_answer` for a recovery question, `interpret_approval` for a gate answer without a
yes or no at its head), the scripted LLM reads it well (valid JSON of every kind) or badly (not
JSON, an unknown value, wrong types, an HTTP 500); a yes or no at the head is read without it.

Each case names its ending, as the product defines it per interrupt kind:

- intake question (`clarify`): the answer goes to the classifier, the run goes on; a classifier
  that is still unsure asks again, one that fails falls back to its rules;
- recovery question (`clarify` after failed attempts): retry with the user's words (or the
  LLM's reading of them) as the hint, skip, replan or stop; an answer the LLM cannot read is a
  retry with the words themselves;
- epic plan (`epic_plan`): approved runs the plan, a refusal without a reason ends the run with
  nothing done, a refusal with a reason (an unreadable answer's words are one) replans and asks again;
- commit and push gates: approved commits (pushes) on the task branch, anything else leaves the
  repository (the remote) as it was and the run ends done, saying so;
- budget and cloud gates (no LLM reading): approved continues (a doubled budget, the cloud
  model), anything else ends the run with the budget's or the cloud's error.

Every ending is also clear: no Python exception in the push or the service's log. (A real bug was
an `AttributeError: 'str' object has no attribute 'value'` after "Implement it exactly as the
instructions say." to a recovery question.)

The service process, nx-27017, the scripted LLM, the fake Kotlin server and the scripted agent,
on the local runner only (nothing here is runner-specific); budget and cloud approvals on one
extra service that asks for both.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.cli.wire import approval_body
from app.texts import texts
from tests.fixtures.llm_server import Reply
from tests.fixtures.service import ServiceProcess, service_env
from tests.support import (
    advice_script,
    attempt_instructions,
    classification,
    code_task_script,
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

LOCAL_ONLY = pytest.mark.parametrize("service", ["local"], indirect=True)
#: The runs ask in Czech (their requests are Czech), so their texts come from here.
CS_TEXTS = texts("cs")

# ------------------------------------------------------------------------------ what people type
EN = "Implement it exactly as the instructions say."  # the answer that once crashed a run
CS = "Udělej to přesně podle zadání."
EMPTY = ""
WEATHER_EN = "What's the weather like in Prague?"
WEATHER_CS = "Jaké je počasí?"
YESTERDAY = "What did you do yesterday?"  # unrelated, but Kotlin flags it approved: "yes" in "yesterday"
ANSWERS = {
    "yes-cs": "ano, pokračuj", "yes-commit": "ano, commitni to", "yes-en": "yes go ahead",
    "no-cs": "ne", "no-en": "no, don't",
    "en": EN, "cs": CS, "empty": EMPTY,
    "unrelated-en": WEATHER_EN, "unrelated-cs": WEATHER_CS, "unrelated-yes": YESTERDAY,
}
#: Answers a gate reads by their words alone (a yes or no at the head, or nothing at all).
READ_WITHOUT_LLM = {ANSWERS[key] for key in ("yes-cs", "yes-commit", "yes-en", "no-cs", "no-en", "empty")}

# ------------------------------------------------------------------------------ how the LLM reads them
RECOVERY_READINGS: dict[str, dict[str, Any]] = {
    "retry": {"content": json.dumps({"suggested_action": "retry", "hint": "follow the instructions exactly"})},
    "skip_step": {"content": json.dumps({"suggested_action": "skip_step", "hint": ""})},
    "stop": {"content": json.dumps({"suggested_action": "stop", "hint": None})},
    "replanning": {"content": json.dumps({"suggested_action": "replanning", "hint": "plan it differently"})},
    "ask_user": {"content": json.dumps({"suggested_action": "ASK_USER", "hint": "ask me again"})},
    "not-json": {"content": "Sure! The user wants you to try once more, carefully."},
    "unknown-action": {"content": json.dumps({"suggested_action": "dance", "hint": "cha-cha"})},
    "wrong-types": {"content": json.dumps({"suggested_action": ["retry"], "hint": {"text": 1}})},
    "http-500": {"status": 500, "error_body": "model crashed"},
}
APPROVAL_READINGS: dict[str, dict[str, Any]] = {
    "approve": {"content": json.dumps({"approved": True, "modification": None, "reason": None})},
    "refuse": {"content": json.dumps({"approved": False, "modification": None, "reason": None})},
    "not-json": {"content": "The user seems to be asking about something else."},
    "unknown-value": {"content": json.dumps({"approved": "maybe", "modification": None, "reason": None})},
    "wrong-types": {"content": json.dumps({"approved": [True], "modification": 5, "reason": {"why": "?"}})},
    "http-500": {"status": 500, "error_body": "model crashed"},
}

#: What an error text must never contain: it is read by a person, not a developer.
EXCEPTION_MARKS = ("Traceback", "AttributeError", "TypeError", "KeyError", "ValueError", "IndexError",
                   "NameError", "UnboundLocalError", "AssertionError", "RuntimeError", "ValidationError",
                   "BudgetExceededError", "'str' object", "'NoneType' object", "object has no attribute",
                   "object is not")
ENDINGS = ("done", "error", "interrupted")

CALC = "def subtract(a, b):\n    return a - b"


def reading(node: str, behaviour: dict[str, Any]) -> Reply:
    return Reply(match=node_marker(node), name=node, **behaviour)


def case(answer: str, behaviour: str, ending: str, *marks: Any) -> Any:
    """One answer, the LLM's reading of it (unused when the words alone say it) and the ending."""
    return pytest.param(ANSWERS[answer], behaviour, ending, id=f"{answer}-{behaviour}-{ending}", marks=marks)


def assert_read_by_the_llm(llm: Any, node: str, answer: str) -> None:
    """An answer the words alone do not settle was given to the LLM to read; a plain yes, no or
    nothing never was (the words win over any reading)."""
    read = [r.last_user for r in llm.requests if r.matched == node]
    if answer in READ_WITHOUT_LLM:
        assert read == [], read
    else:
        assert read and answer in read[0], read


def called(llm: Any, name: str) -> int:
    """How many requests the scripted LLM answered with the rule of this name."""
    return len([r for r in llm.requests if r.matched == name])


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture
def client(service: Any) -> Iterator[httpx.Client]:
    with service.client() as http:
        wait_until(lambda: not http.get("/health").json()["busy"], timeout=60, what="a free orchestration slot")
        yield http


@pytest.fixture
def workspace(data_root: Path) -> tuple[str, Path]:
    rel = f"clients/c1/{new_task_id()}"
    return rel, make_git_repo(data_root / rel)


@pytest.fixture(scope="module")
def asking_service(mongo_server: Any, llm_server: Any, kotlin_server: Any, kb_server: Any, data_root: Path,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """A service that asks before it goes over a budget (`BUDGET_ON_EXCEEDED=ask`) and before it
    uses a cloud model (an Anthropic key, the endpoint on the scripted server)."""
    env = service_env(mongo_url=mongo_server.url, llm_url=llm_server.url, kotlin_url=kotlin_server.url,
                      kb_url=kb_server.url, data_root=data_root, budget_on_exceeded="ask",
                      anthropic_api_key="test-key", anthropic_api_base=llm_server.url)
    proc = ServiceProcess(env=env, log_path=tmp_path_factory.mktemp("svc") / "service-asking.log").start()
    yield proc
    proc.stop()


@pytest.fixture
def asking_client(asking_service: ServiceProcess) -> Iterator[httpx.Client]:
    with asking_service.client() as http:
        wait_until(lambda: not http.get("/health").json()["busy"], timeout=60, what="a free orchestration slot")
        yield http


# ------------------------------------------------------------------------------ the checks
class Run:
    """One orchestration on a service, from its start to the status after the user's answer."""

    def __init__(self, service: ServiceProcess, client: httpx.Client, kotlin: Any, body: dict[str, Any]) -> None:
        self.service, self.client, self.kotlin = service, client, kotlin
        self.log_from = service.log_path.stat().st_size if service.log_path.exists() else 0
        self.task_id: str = body["task_id"]
        response = client.post("/orchestrate/stream", json=body)
        assert response.status_code == 200, response.text
        self.thread_id: str = response.json()["thread_id"]

    def statuses(self) -> list[dict[str, Any]]:
        return [s for s in self.kotlin.statuses if s["threadId"] == self.thread_id]

    def next_status(self, after: int, timeout: float = 30) -> dict[str, Any]:
        """The first done / error / interrupted push of this run after its first `after` pushes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [s for s in self.statuses()[after:] if s["status"] in ENDINGS]
            if found:
                return found[0]
            time.sleep(0.01)
        raise AssertionError(f"run {self.thread_id} neither ended nor asked again within {timeout} s (a hang?)\n"
                             f"pushes:\n{self.kotlin.describe()}\nservice log:\n{self.service.log_tail(40)}")

    def asked(self, action: str) -> dict[str, Any]:
        """The run's first question, which must be of this kind."""
        question = self.next_status(0)
        assert question["status"] == "interrupted", question
        assert question["interruptAction"] == action, question
        return question

    def answer(self, text: str, *, clarification: bool) -> dict[str, Any]:
        """Answers as Kotlin would and returns how the run then ends (or asks again)."""
        seen = len(self.statuses())
        response = self.client.post(f"/approve/{self.thread_id}", json=approval_body(text, clarification=clarification))
        assert response.status_code == 200, response.text
        assert response.json()["status"] in ("resuming", "ended"), response.text
        return self.next_status(seen)

    @property
    def branch(self) -> str:
        return f"task/{self.task_id}"

    def assert_ended_clearly(self, ending: dict[str, Any]) -> None:
        """Done, a clear error, or a new question; no Python exception in the push or the log."""
        problems = self.logged_problems()
        logged = "\n".join(problems)
        assert ending["status"] in ENDINGS, ending
        if ending["status"] == "error":
            assert (ending["error"] or "").strip(), ending
        if ending["status"] == "interrupted":
            assert ending["interruptAction"] and (ending["interruptDescription"] or "").strip(), ending
        for field in ("error", "summary", "interruptDescription"):
            text = ending.get(field) or ""
            assert not [mark for mark in EXCEPTION_MARKS if mark in text], f"{field}: {text}\nservice log:\n{logged}"
        assert problems == [], logged
        assert self.kotlin.violations == [], self.kotlin.violations

    def assert_asked_again(self, ending: dict[str, Any], action: str) -> None:
        """A new question of the same kind, which can be cancelled too (nothing is left waiting)."""
        assert ending["status"] == "interrupted" and ending["interruptAction"] == action, ending
        seen = len(self.statuses())
        assert self.client.post(f"/cancel/{self.thread_id}").status_code == 200
        assert self.next_status(seen)["status"] == "error"

    def logged_problems(self) -> list[str]:
        """Log lines of this run (or of no run) since it started that carry an unhandled error."""
        raw = self.service.log_path.read_bytes()[self.log_from:].decode(errors="replace")
        problems = []
        for line in raw.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                if "Traceback" in line or re.search(r"\b\w+(?:Error|Exception): ", line):
                    problems.append(line)
                continue
            if not isinstance(entry, dict) or entry.get("thread_id") not in (self.thread_id, None):
                continue
            if entry.get("level") in ("ERROR", "CRITICAL") or "Traceback" in str(entry.get("exception", "")):
                problems.append(line)
        return problems


def assert_committed(run: Run, repo: Path, ending: dict[str, Any], files: list[str]) -> None:
    """Done, with exactly one new commit of `files` on the task branch, and the report says so."""
    assert ending["status"] == "done" and ending["branch"] == run.branch, ending
    assert CS_TEXTS.git_committed.format(branch=run.branch) in ending["summary"], ending["summary"]
    assert git(repo, "rev-list", "--count", f"main..{run.branch}").strip() == "1"
    assert git(repo, "show", "--name-only", "--format=", run.branch).split() == files


def assert_nothing_committed(repo: Path) -> None:
    """The repository holds its first commit only: no task branch, no new commit on any branch."""
    assert git(repo, "branch", "--list", "task/*").strip() == ""
    assert git(repo, "rev-list", "--all", "--count").strip() == "1"


# ------------------------------------------------------------------------------ 1. intake clarification
INTAKE_ANSWERS = ("en", "cs", "empty", "unrelated-en", "unrelated-cs")


@LOCAL_ONLY
@pytest.mark.parametrize("answer", [ANSWERS[key] for key in INTAKE_ANSWERS], ids=INTAKE_ANSWERS)
def test_free_text_answer_to_an_intake_question_goes_to_the_classifier_and_the_run_goes_on(
        service, client, llm, kotlin, answer: str) -> None:
    llm.script(
        Reply(match=node_marker("intake"), content=classification(goal_clear=False, questions=["Který projekt?"]),
              times=1, name="intake-unclear"),
        Reply(match=node_marker("intake"), content=classification("advice"), name="intake"),
        Reply(match=node_marker("respond"), content="Odpověď.", name="respond"),
    )
    run = Run(service, client, kotlin, orchestrate_body(query="Oprav to"))
    assert "Který projekt?" in run.asked("clarify")["interruptDescription"]

    ending = run.answer(answer, clarification=True)

    run.assert_ended_clearly(ending)
    assert ending["status"] == "done" and ending["summary"] == "Odpověď.", ending
    classified_again = [r.text for r in llm.requests if r.matched == "intake"]
    assert len(classified_again) == 1 and answer in classified_again[0]  # whatever it says, it was heard


@LOCAL_ONLY
def test_an_unrelated_answer_to_an_intake_question_that_leaves_the_goal_unclear_is_asked_again(
        service, client, llm, kotlin) -> None:
    llm.script(
        Reply(match=node_marker("intake"), content=classification(goal_clear=False, questions=["Který projekt?"]),
              times=1, name="intake-unclear"),
        Reply(match=node_marker("intake"), content=classification(goal_clear=False,
                                                                  questions=["Který projekt přesně?"]), name="intake"),
        Reply(match=node_marker("respond"), content="Odpověď.", name="respond"),
    )
    run = Run(service, client, kotlin, orchestrate_body(query="Oprav to"))
    run.asked("clarify")

    ending = run.answer(WEATHER_EN, clarification=True)

    run.assert_ended_clearly(ending)
    assert "Který projekt přesně?" in ending["interruptDescription"], ending
    run.assert_asked_again(ending, "clarify")
    assert called(llm, "respond") == 0


@LOCAL_ONLY
def test_an_unrelated_answer_to_an_intake_question_with_a_failing_classifier_falls_back_to_its_rules(
        service, client, llm, kotlin) -> None:
    llm.script(
        Reply(match=node_marker("intake"), content=classification(goal_clear=False, questions=["Který projekt?"]),
              times=1, name="intake-unclear"),
        Reply(match=node_marker("intake"), content="Sorry, I cannot classify that.", name="intake"),
        Reply(match=node_marker("respond"), content="Odpověď.", name="respond"),
    )
    run = Run(service, client, kotlin, orchestrate_body(query="Oprav to"))
    run.asked("clarify")

    ending = run.answer(WEATHER_EN, clarification=True)

    run.assert_ended_clearly(ending)
    assert ending["status"] == "done" and ending["summary"].startswith("Odpověď."), ending


# ------------------------------------------------------------------------------ 2. recovery question
#: The hint the retry is told ("Do differently: …"): the LLM's, else the user's own words.
RETRY_HINTS = {"retry": "follow the instructions exactly", "ask_user": "ask me again"}

RECOVERY_CASES = [
    case("en", "retry", "retried"),
    case("en", "skip_step", "skipped"),
    case("en", "stop", "stopped"),
    case("en", "replanning", "replanned"),
    case("en", "ask_user", "retried"),  # the LLM may not answer a question with a question
    case("en", "not-json", "retried"),
    case("en", "unknown-action", "retried"),
    case("en", "wrong-types", "retried"),
    case("en", "http-500", "retried"),
    case("cs", "skip_step", "skipped"),
    case("empty", "retry", "retried"),  # nothing to read: go on, try again
    case("unrelated-en", "stop", "stopped"),
    case("unrelated-cs", "retry", "retried"),
    case("unrelated-cs", "http-500", "retried"),
]


@LOCAL_ONLY
@pytest.mark.parametrize(("answer", "behaviour", "expected"), RECOVERY_CASES)
def test_free_text_answer_to_a_recovery_question_brings_the_action_it_reads_as(
        service, client, llm, kotlin, workspace, answer: str, behaviour: str, expected: str) -> None:
    rel, repo = workspace
    # three failed attempts (the last one reflected on, REFLECTION_FROM_ATTEMPT), then the user is asked
    failing_thrice = "\n".join(["@@FAIL @1 the build server is unreachable",
                                "@@FAIL @2 the build server is still unreachable",
                                "@@FAIL @3 the build server is down again",
                                file_block("calc.py @4+", CALC)])
    llm.script(
        reading("interpret_answer", RECOVERY_READINGS[behaviour]),
        Reply(match=node_marker("intake"), content=classification("single_task", "code", "simple"), name="intake"),
        Reply(match=node_marker("plan"), content=goals_json("Odčítání"), name="plan"),
        Reply(match=node_marker("plan_steps"), content=steps_json(failing_thrice), name="plan_steps"),
        Reply(match=node_marker("reflect"), content=reflection("ask_user", root_cause="unreachable server"),
              name="reflect"),
        Reply(match=node_marker("replan"), content=steps_json(file_block("calc.py", CALC)), name="replan"),
        Reply(match=node_marker("finalize"), content="Hotovo.", name="finalize"),
    )
    body = orchestrate_body(workspace_path=rel, query="Přidej odčítání do kalkulačky",
                            rules=kotlin_rules(require_approval_commit=False))
    run = Run(service, client, kotlin, body)
    assert "unreachable" in run.asked("clarify")["interruptDescription"]

    ending = run.answer(answer, clarification=True)

    run.assert_ended_clearly(ending)
    assert_read_by_the_llm(llm, "interpret_answer", answer)
    if expected in ("retried", "replanned"):  # the step's fourth attempt (or the new plan) did the work
        assert_committed(run, repo, ending, ["calc.py"])
        assert called(llm, "replan") == (expected == "replanned")
    if expected == "retried":
        told = attempt_instructions(sse_events(client, run.thread_id))
        hint = RETRY_HINTS.get(behaviour, answer) if answer else ""
        assert sorted(told) == [1, 2, 3, 4], told  # one attempt more than the three the question was about
        assert (f"Do differently: {hint}" in told[4]) if hint else ("Do differently" not in told[4]), told[4]
    if expected == "skipped":  # nothing was done, so nothing to commit: the report says what was skipped
        assert ending["status"] == "done" and ending["branch"] is None, ending
        assert CS_TEXTS.report_skipped.split("{")[0] in ending["summary"], ending["summary"]
        assert_nothing_committed(repo)
    if expected == "stopped":  # the user's stop: an error saying so, nothing committed
        assert ending["status"] == "error" and CS_TEXTS.halt_user_stop.split("{")[0] in ending["error"], ending
        assert_nothing_committed(repo)


# ------------------------------------------------------------------------------ 3. plan approval of an epic
PLAN_CASES = [
    case("yes-cs", "refuse", "carried-out"),
    case("no-cs", "approve", "rejected"),
    case("no-en", "approve", "rejected"),  # "don't" repeats the no: no reason to replan
    case("en", "approve", "carried-out"),
    case("en", "refuse", "rejected"),
    case("en", "approve-with-the-answer-as-condition", "carried-out"),
    case("en", "refuse-with-the-answer-as-reason", "asked-again"),
    case("en", "not-json", "asked-again"),  # unreadable: a refusal with the words as its reason
    case("en", "wrong-types", "asked-again"),
    case("en", "http-500", "asked-again"),
    case("cs", "approve", "carried-out"),
    case("empty", "approve", "rejected"),
    case("unrelated-en", "unknown-value", "asked-again"),
    case("unrelated-cs", "refuse", "rejected"),
    case("unrelated-yes", "http-500", "asked-again"),  # "yes" in "yesterday" is no yes
]


def approval_reading(behaviour: str, answer: str) -> dict[str, Any]:
    if behaviour == "approve-with-the-answer-as-condition":
        return {"content": json.dumps({"approved": True, "modification": answer, "reason": None})}
    if behaviour == "refuse-with-the-answer-as-reason":
        return {"content": json.dumps({"approved": False, "modification": None, "reason": answer})}
    return APPROVAL_READINGS[behaviour]


@LOCAL_ONLY
@pytest.mark.parametrize(("answer", "behaviour", "expected"), PLAN_CASES)
def test_free_text_answer_to_an_epic_plan_runs_it_ends_the_run_or_replans_and_asks_again(
        service, client, llm, kotlin, answer: str, behaviour: str, expected: str) -> None:
    llm.script(
        reading("interpret_approval", approval_reading(behaviour, answer)),
        Reply(match=node_marker("intake"), content=classification("epic", "code", "complex"), name="intake"),
        Reply(match=node_marker("plan_epic"), content=goals_json("API klient"), name="plan_epic"),
        Reply(match=node_marker("replan"), content=goals_json("API klient nad urllib"), name="replan"),
        Reply(match=node_marker("plan_steps"), name="plan_steps", content=json.dumps({"steps": [
            {"instructions": "Popiš klienta", "step_type": "respond"}]})),
        Reply(match=node_marker("execute_step"), content="Klient popsán.", name="execute_step"),
        Reply(match=node_marker("finalize"), content="Epic hotov.", name="finalize"),
    )
    run = Run(service, client, kotlin, orchestrate_body(query="Udělej API klienta"))
    assert "API klient" in run.asked("epic_plan")["interruptDescription"]

    ending = run.answer(answer, clarification=False)

    run.assert_ended_clearly(ending)
    assert_read_by_the_llm(llm, "interpret_approval", answer)
    if expected == "carried-out":
        assert ending["status"] == "done" and "Klient popsán." in ending["summary"], ending
        # a condition that adds work ("Implement …") is one more goal after the planned one
        added = behaviour == "approve-with-the-answer-as-condition"
        assert called(llm, "execute_step") == 1 + added and called(llm, "replan") == 0
    elif expected == "rejected":
        assert ending["status"] == "done" and ending["summary"].startswith(CS_TEXTS.plan_rejected), ending
        assert called(llm, "plan_steps") == called(llm, "execute_step") == called(llm, "replan") == 0
    else:
        assert ending["status"] == "interrupted" and ending["interruptAction"] == "epic_plan", ending
        assert "API klient nad urllib" in ending["interruptDescription"], ending
        replanned = [r.text for r in llm.requests if r.matched == "replan"]
        assert len(replanned) == 1 and answer in replanned[0]  # the refusal's reason: the user's words
        assert called(llm, "plan_steps") == 0
        run.assert_asked_again(ending, "epic_plan")


# ------------------------------------------------------------------------------ 4. commit gate
COMMIT_CASES = [
    case("yes-commit", "refuse", "committed"),
    case("yes-en", "refuse", "committed"),
    case("no-en", "approve", "not-committed"),
    case("en", "approve", "committed"),
    case("en", "refuse", "not-committed"),
    case("en", "not-json", "not-committed"),  # unreadable: no yes among the words
    case("en", "http-500", "not-committed"),
    case("cs", "approve", "committed"),
    case("empty", "approve", "not-committed"),
    case("unrelated-en", "unknown-value", "not-committed"),
    case("unrelated-cs", "http-500", "not-committed"),
    case("unrelated-yes", "http-500", "not-committed"),  # Kotlin's flag says yes ("yesterday"), the words do not
]


@LOCAL_ONLY
@pytest.mark.parametrize(("answer", "behaviour", "expected"), COMMIT_CASES)
def test_free_text_answer_to_the_commit_question_commits_only_what_was_approved(
        service, client, llm, kotlin, workspace, answer: str, behaviour: str, expected: str) -> None:
    rel, repo = workspace
    llm.script(reading("interpret_approval", APPROVAL_READINGS[behaviour]), *code_task_script())
    run = Run(service, client, kotlin, orchestrate_body(workspace_path=rel))
    assert run.branch in run.asked("commit")["interruptDescription"]

    ending = run.answer(answer, clarification=False)

    run.assert_ended_clearly(ending)
    assert_read_by_the_llm(llm, "interpret_approval", answer)
    if expected == "committed":
        assert_committed(run, repo, ending, ["app/health.py"])
    else:  # done, the work left in the workspace uncommitted, and the report says so
        assert ending["status"] == "done" and ending["branch"] is None, ending
        assert CS_TEXTS.git_commit_rejected in ending["summary"], ending["summary"]
        assert_nothing_committed(repo)
        assert (repo / "app" / "health.py").is_file()


# ------------------------------------------------------------------------------ 5. push gate
PUSH_CASES = [
    case("yes-en", "refuse", "pushed"),
    case("no-en", "approve", "not-pushed"),
    case("en", "approve", "pushed"),
    case("unrelated-en", "http-500", "not-pushed"),
    case("unrelated-cs", "wrong-types", "not-pushed"),
]


@LOCAL_ONLY
@pytest.mark.parametrize(("answer", "behaviour", "expected"), PUSH_CASES)
def test_free_text_answer_to_the_push_question_pushes_only_what_was_approved(
        service, client, llm, kotlin, workspace, tmp_path, answer: str, behaviour: str, expected: str) -> None:
    rel, repo = workspace
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(repo, "remote", "add", "origin", str(origin))
    llm.script(reading("interpret_approval", APPROVAL_READINGS[behaviour]), *code_task_script())
    run = Run(service, client, kotlin, orchestrate_body(workspace_path=rel, rules=kotlin_rules(auto_push=True)))
    run.asked("commit")
    asked_again = run.answer("ano", clarification=False)
    assert asked_again["status"] == "interrupted" and asked_again["interruptAction"] == "push", asked_again

    ending = run.answer(answer, clarification=False)

    run.assert_ended_clearly(ending)
    assert_read_by_the_llm(llm, "interpret_approval", answer)
    assert ending["status"] == "done" and ending["branch"] == run.branch, ending  # committed either way
    assert git(repo, "rev-list", "--count", f"main..{run.branch}").strip() == "1"
    if expected == "pushed":
        assert CS_TEXTS.git_pushed.format(branch=run.branch) in ending["summary"], ending["summary"]
        assert git(origin, "rev-parse", run.branch) == git(repo, "rev-parse", run.branch)
    else:
        assert CS_TEXTS.git_push_rejected.format(branch=run.branch) in ending["summary"], ending["summary"]
        assert git(origin, "branch", "--list").strip() == ""


# ------------------------------------------------------------------------------ 6. budget and cloud approvals
#: The scripted server's Anthropic endpoint: the cloud tier's calls.
CLOUD = "/v1/messages"
#: These gates read the words without an LLM: only a yes they give goes on (Kotlin's flag counts only without words).
MONEY_CASES = [
    pytest.param(ANSWERS[key], expected, id=f"{key}-{expected}")
    for key, expected in (("yes-cs", "goes-on"), ("yes-en", "goes-on"), ("no-en", "stops"), ("en", "stops"),
                          ("cs", "stops"), ("empty", "stops"), ("unrelated-en", "stops"), ("unrelated-cs", "stops"),
                          ("unrelated-yes", "stops"))
]


@pytest.mark.parametrize(("answer", "expected"), MONEY_CASES)
def test_free_text_answer_to_a_budget_question_extends_the_budget_only_when_approved(
        asking_service, asking_client, llm, kotlin, answer: str, expected: str) -> None:
    llm.script(*advice_script("Pokračováno"))
    run = Run(asking_service, asking_client, kotlin, orchestrate_body(budget={"max_tokens": 10}))
    run.asked("budget")

    ending = run.answer(answer, clarification=False)

    run.assert_ended_clearly(ending)
    if expected == "goes-on":
        assert ending["status"] == "done" and ending["summary"].startswith("Pokračováno"), ending
    else:
        assert ending["status"] == "error" and CS_TEXTS.budget_exhausted.split("{")[0] in ending["error"], ending
        assert called(llm, "respond") == 0


@pytest.mark.parametrize(("answer", "expected"), MONEY_CASES)
def test_free_text_answer_to_a_cloud_model_question_uses_the_cloud_only_when_approved(
        asking_service, asking_client, llm, kotlin, answer: str, expected: str) -> None:
    # The local model always fails (its breaker may be open from the cases before: then it is not
    # even called), the cloud model answers.
    llm.script(
        Reply(match=node_marker("intake"), path=CLOUD, content=classification(), name="cloud-intake"),
        Reply(match=node_marker("intake"), status=500, error_body="model crashed", name="local-intake"),
        Reply(match=node_marker("respond"), content="Odpověď z cloudu", name="respond"),
    )
    run = Run(asking_service, asking_client, kotlin, orchestrate_body())
    run.asked("cloud_model")

    ending = run.answer(answer, clarification=False)

    run.assert_ended_clearly(ending)
    cloud_calls = [r for r in llm.requests if r.path == CLOUD]
    if expected == "goes-on":
        assert ending["status"] == "done" and ending["summary"].startswith("Odpověď z cloudu"), ending
        assert cloud_calls and cloud_calls[0].matched == "cloud-intake"  # the failed call, on the cloud model
    else:
        assert ending["status"] == "error" and ending["error"].startswith(CS_TEXTS.cloud_rejected), ending
        assert cloud_calls == [] and called(llm, "respond") == 0
