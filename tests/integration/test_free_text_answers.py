"""No answer a person can type to a question or gate crashes a run.

Every interrupt the graph raises gets free text, sent exactly as Kotlin sends it
(`app.cli.wire.approval_body`): an instruction in English and in Czech, an empty answer, and
unrelated questions in both languages. Where the service asks the LLM to read the answer
(`interpret_answer` for a recovery question, `interpret_approval` for a gate answer without a
clear yes or no), the scripted LLM reads it well (valid JSON of every kind) or badly (not JSON,
an unknown value, wrong types, an HTTP 500). Whatever happens, the run goes on and ends with a
clear status push — `done`, `error` or `interrupted` (a new question) — and neither that push nor
the service's log shows a Python exception. (A real bug was an `AttributeError: 'str' object has
no attribute 'value'` after "Implement it exactly as the instructions say." to a recovery
question.)

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
from tests.fixtures.llm_server import Reply
from tests.fixtures.service import ServiceProcess, service_env
from tests.support import (
    advice_script,
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
    steps_json,
    wait_until,
)

LOCAL_ONLY = pytest.mark.parametrize("service", ["local"], indirect=True)

# ------------------------------------------------------------------------------ what people type
EN = "Implement it exactly as the instructions say."  # the answer that once crashed a run
CS = "Udělej to přesně podle zadání."
EMPTY = ""
WEATHER_EN = "What's the weather like in Prague?"
WEATHER_CS = "Jaké je počasí?"
ANSWERS = {"en": EN, "cs": CS, "empty": EMPTY, "unrelated-en": WEATHER_EN, "unrelated-cs": WEATHER_CS}

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


def case(answer: str, behaviour: str) -> Any:
    return pytest.param(ANSWERS[answer], behaviour, id=f"{answer}-{behaviour}")


def assert_read_by_the_llm(llm: Any, node: str, answer: str) -> None:
    """An answer with words in it was given to the LLM to read; an empty one never was."""
    read = [r.last_user for r in llm.requests if r.matched == node]
    if answer:
        assert read and answer in read[0], read
    else:
        assert read == []


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
            time.sleep(0.05)
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
        if ending["status"] == "interrupted":  # leave nothing waiting: the new question can be cancelled too
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


# ------------------------------------------------------------------------------ 1. intake clarification
@LOCAL_ONLY
@pytest.mark.parametrize("answer", list(ANSWERS.values()), ids=list(ANSWERS))
def test_free_text_answer_to_an_intake_question_never_crashes_the_run(service, client, llm, kotlin,
                                                                      answer: str) -> None:
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
    assert ending["status"] == "done" and ending["summary"] == "Odpověď."


@LOCAL_ONLY
@pytest.mark.parametrize("classifier", ["not-json", "still-unclear"])
def test_free_text_answer_to_an_intake_question_with_a_confused_classifier_never_crashes_the_run(
        service, client, llm, kotlin, classifier: str) -> None:
    again = ("Sorry, I cannot classify that." if classifier == "not-json"
             else classification(goal_clear=False, questions=["Který projekt přesně?"]))
    llm.script(
        Reply(match=node_marker("intake"), content=classification(goal_clear=False, questions=["Který projekt?"]),
              times=1, name="intake-unclear"),
        Reply(match=node_marker("intake"), content=again, name="intake"),
        Reply(match=node_marker("respond"), content="Odpověď.", name="respond"),
    )
    run = Run(service, client, kotlin, orchestrate_body(query="Oprav to"))
    run.asked("clarify")

    run.assert_ended_clearly(run.answer(WEATHER_EN, clarification=True))


# ------------------------------------------------------------------------------ 2. recovery question
RECOVERY_CASES = [
    *[case("en", behaviour) for behaviour in RECOVERY_READINGS],
    case("cs", "skip_step"),
    case("cs", "not-json"),
    case("empty", "retry"),
    case("unrelated-en", "stop"),
    case("unrelated-en", "unknown-action"),
    case("unrelated-cs", "retry"),
    case("unrelated-cs", "http-500"),
]


@LOCAL_ONLY
@pytest.mark.parametrize(("answer", "behaviour"), RECOVERY_CASES)
def test_free_text_answer_to_a_recovery_question_never_crashes_the_run(service, client, llm, kotlin, workspace,
                                                                       answer: str, behaviour: str) -> None:
    rel, _ = workspace
    # three failed attempts (the last one reflected on, REFLECTION_FROM_ATTEMPT), then the user is asked
    failing_twice = "\n".join(["@@FAIL @1 the build server is unreachable",
                               "@@FAIL @2 the build server is still unreachable",
                               "@@FAIL @3 the build server is down again",
                               file_block("calc.py @4+", CALC)])
    llm.script(
        reading("interpret_answer", RECOVERY_READINGS[behaviour]),
        Reply(match=node_marker("intake"), content=classification("single_task", "code", "simple"), name="intake"),
        Reply(match=node_marker("plan"), content=goals_json("Odčítání"), name="plan"),
        Reply(match=node_marker("plan_steps"), content=steps_json(failing_twice), name="plan_steps"),
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


# ------------------------------------------------------------------------------ 3. plan approval of an epic
PLAN_CASES = [
    *[case("en", behaviour) for behaviour in ("approve", "refuse", "not-json", "wrong-types", "http-500")],
    pytest.param(EN, "approve-with-the-answer-as-condition", id="en-approve-with-the-answer-as-condition"),
    pytest.param(EN, "refuse-with-the-answer-as-reason", id="en-refuse-with-the-answer-as-reason"),
    case("cs", "approve"),
    case("empty", "approve"),
    case("unrelated-en", "unknown-value"),
    case("unrelated-cs", "approve"),
]


def approval_reading(behaviour: str, answer: str) -> dict[str, Any]:
    if behaviour == "approve-with-the-answer-as-condition":
        return {"content": json.dumps({"approved": True, "modification": answer, "reason": None})}
    if behaviour == "refuse-with-the-answer-as-reason":
        return {"content": json.dumps({"approved": False, "modification": None, "reason": answer})}
    return APPROVAL_READINGS[behaviour]


@LOCAL_ONLY
@pytest.mark.parametrize(("answer", "behaviour"), PLAN_CASES)
def test_free_text_answer_to_an_epic_plan_never_crashes_the_run(service, client, llm, kotlin, answer: str,
                                                                behaviour: str) -> None:
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


# ------------------------------------------------------------------------------ 4. commit gate
COMMIT_CASES = [
    *[case("en", behaviour) for behaviour in ("approve", "refuse", "not-json", "wrong-types", "http-500")],
    case("cs", "approve"),
    case("empty", "approve"),
    case("unrelated-en", "unknown-value"),
    case("unrelated-cs", "http-500"),
]


@LOCAL_ONLY
@pytest.mark.parametrize(("answer", "behaviour"), COMMIT_CASES)
def test_free_text_answer_to_the_commit_question_never_crashes_the_run(service, client, llm, kotlin, workspace,
                                                                       answer: str, behaviour: str) -> None:
    rel, _ = workspace
    llm.script(reading("interpret_approval", APPROVAL_READINGS[behaviour]), *code_task_script())
    run = Run(service, client, kotlin, orchestrate_body(workspace_path=rel))
    run.asked("commit")

    ending = run.answer(answer, clarification=False)

    run.assert_ended_clearly(ending)
    assert_read_by_the_llm(llm, "interpret_approval", answer)


# ------------------------------------------------------------------------------ 5. push gate
PUSH_CASES = [
    case("en", "approve"),
    case("cs", "not-json"),
    case("empty", "approve"),
    case("unrelated-en", "http-500"),
    case("unrelated-cs", "wrong-types"),
]


@LOCAL_ONLY
@pytest.mark.parametrize(("answer", "behaviour"), PUSH_CASES)
def test_free_text_answer_to_the_push_question_never_crashes_the_run(service, client, llm, kotlin, workspace,
                                                                     tmp_path, answer: str, behaviour: str) -> None:
    rel, repo = workspace
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "origin.git"))
    git(repo, "remote", "add", "origin", str(tmp_path / "origin.git"))
    llm.script(reading("interpret_approval", APPROVAL_READINGS[behaviour]), *code_task_script())
    run = Run(service, client, kotlin, orchestrate_body(workspace_path=rel, rules=kotlin_rules(auto_push=True)))
    run.asked("commit")
    asked_again = run.answer("ano", clarification=False)
    assert asked_again["status"] == "interrupted" and asked_again["interruptAction"] == "push", asked_again

    ending = run.answer(answer, clarification=False)

    run.assert_ended_clearly(ending)
    assert_read_by_the_llm(llm, "interpret_approval", answer)


# ------------------------------------------------------------------------------ 6. budget and cloud approvals
@pytest.mark.parametrize("answer", list(ANSWERS.values()), ids=list(ANSWERS))
def test_free_text_answer_to_a_budget_question_never_crashes_the_run(asking_service, asking_client, llm, kotlin,
                                                                     answer: str) -> None:
    llm.script(*advice_script("Pokračováno"))
    run = Run(asking_service, asking_client, kotlin, orchestrate_body(budget={"max_tokens": 10}))
    run.asked("budget")

    ending = run.answer(answer, clarification=False)

    run.assert_ended_clearly(ending)


@pytest.mark.parametrize("answer", list(ANSWERS.values()), ids=list(ANSWERS))
def test_free_text_answer_to_a_cloud_model_question_never_crashes_the_run(asking_service, asking_client, llm,
                                                                          kotlin, answer: str) -> None:
    llm.script(
        Reply(match=node_marker("intake"), status=500, error_body="model crashed", times=3, name="local-intake"),
        Reply(match=node_marker("intake"), content=classification(), name="cloud-intake"),
        Reply(match=node_marker("respond"), content="Odpověď z cloudu", name="respond"),
    )
    run = Run(asking_service, asking_client, kotlin, orchestrate_body())
    run.asked("cloud_model")

    ending = run.answer(answer, clarification=False)

    run.assert_ended_clearly(ending)
