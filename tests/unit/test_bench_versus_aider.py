"""bench.versus_aider without a model or a service: every stop answered by the service's real action
names, the request Kotlin would send (no test command), bare Aider set up as the service's Aider is,
the judge on real exercises, the idle wait on a loopback server, and the totals' arithmetic."""

from __future__ import annotations

import http.server
import importlib
import json
import re
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from app.graph.nodes import approve_plan, ask_user, clarify, git_operations
from app.llm.approval import BudgetApprovalNeededError, CloudApprovalNeededError
from bench import versus_aider as versus
from bench.exercises import Exercise, load_exercises

REPO = Path(__file__).resolve().parents[2]
BY_NAME = {exercise.name: exercise for exercise in load_exercises()}
LEAP = BY_NAME["exercism/leap"]
COMMAND = "python3 -m pytest -q"


# ------------------------------------------------------------------------------------ stops
def test_every_approval_gate_is_answered_by_the_action_name_the_service_asks_with() -> None:
    sources = {name: Path(module.__file__ or "").read_text(encoding="utf-8")
               for name, module in (("git", git_operations), ("plan", approve_plan))}
    assert '"action": "commit"' in sources["git"] and '"action": "push"' in sources["git"]
    assert '"generative_design" if generative else "epic_plan"' in sources["plan"]
    real = {"commit", "push", "epic_plan", "generative_design", BudgetApprovalNeededError.action,
            CloudApprovalNeededError.action}
    assert set(versus.ANSWERS) == real and "cloud_approval" not in versus.ANSWERS
    expected = {"commit": "yes", "push": "no", "cloud_model": "no", "budget": "yes", "epic_plan": "yes",
                "generative_design": "yes"}
    for action, answer in expected.items():
        assert versus.answer_for({"action": action, "description": "Commit? Push? Cloud?"}, COMMAND) == answer
    assert versus.answer_for({"action": "something_new"}, COMMAND) == "no"
    assert versus.answer_for({}, COMMAND) == "no"


def test_questions_get_the_test_command_a_retry_or_the_users_words() -> None:
    assert '"action": "clarify"' in Path(clarify.__file__ or "").read_text(encoding="utf-8")
    recovery = Path(ask_user.__file__ or "").read_text(encoding="utf-8")
    assert '"action": "clarify"' in recovery and '"options": ["retry", "skip_step", "replanning", "stop"]' in recovery
    asked = {"action": "clarify", "description": "Which of the two functions do you mean?"}
    assert versus.answer_for(asked, COMMAND) == versus.USER_ANSWER
    assert versus.answer_for(asked | {"options": ["retry", "skip_step", "replanning", "stop"]}, COMMAND) == "retry"
    for payload in ({"action": "clarify", "kind": "test_command", "description": "?"},
                    {"action": "clarify", "description": "Which command runs the tests of this project?"},
                    {"action": "clarify", "description": "No tests were found. What command runs the tests?"},
                    {"action": "clarify", "questions": ["Jakým příkazem se spouštějí testy?"]}):
        assert versus.answer_for(payload, COMMAND) == COMMAND, payload
    assert versus.answer_for({"action": "commit", "kind": "test_command"}, COMMAND) == "yes"  # a gate stays a gate


def test_the_service_gets_kotlins_request_without_a_test_command_and_with_require_tests() -> None:
    body = versus.service_body(LEAP, "bench/versus/leap-1")
    assert body.get("environment") is None and "testCommand" not in json.dumps(body)
    assert body["rules"]["require_tests"] is True
    assert "environment" in body  # the key Kotlin sends, null
    assert (body["query"], body["workspace_path"]) == (LEAP.request(), "bench/versus/leap-1")
    assert not body["rules"]["auto_use_anthropic"] and not body["rules"]["auto_push"]


def test_the_services_repository_holds_the_workspace_files_at_its_root_committed(tmp_path: Path) -> None:
    exercise = BY_NAME["exercism/error-handling"]
    repo, relative = versus.make_repository(exercise, tmp_path)
    assert repo == tmp_path / relative and relative.startswith("bench/versus/exercism-error-handling-")
    assert versus.git(repo, "ls-files").split() == sorted(exercise.workspace_files)
    assert versus.git(repo, "status", "--porcelain") == ""


# ------------------------------------------------------------------------------------ aider
def entrypoint_metadata(tmp_path: Path, model: str, monkeypatch: pytest.MonkeyPatch) -> object:
    """What the service's entrypoint writes for its Aider (its `agents.aider` module, imported from the
    entrypoint package's folder and forgotten again afterwards)."""
    package = REPO / "agent-images" / "entrypoint" / "jervis_entrypoint"
    monkeypatch.syspath_prepend(str(package.parent))
    before = set(sys.modules)
    try:
        module = importlib.import_module("jervis_entrypoint.agents.aider")
        assert Path(str(module.__file__)).resolve() == package / "agents" / "aider.py"
        return json.loads(module.aider_model_metadata(tmp_path, model).read_text(encoding="utf-8"))
    finally:
        for name in set(sys.modules) - before:
            if name.partition(".")[0] == "jervis_entrypoint":
                del sys.modules[name]


def test_bare_aider_gets_the_services_model_metadata_and_offline_price_map(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_CONTEXT_TOKENS", raising=False)
    model = "openai/qwen2.5-coder-1.5b"
    assert versus.model_metadata(model) == entrypoint_metadata(tmp_path, model, monkeypatch)
    env = versus.aider_env("http://127.0.0.1:9/v1", {"PATH": "/bin"})
    assert env == {"PATH": "/bin", "OPENAI_API_BASE": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "local",
                   "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def test_bare_aider_runs_the_benchmarks_prompt_on_the_stub_with_its_own_test_loop_and_defaults() -> None:
    argv = versus.aider_argv(Path("/a/aider"), LEAP, "openai/m", Path("/w/m.json"), COMMAND, ["--x"])
    assert argv[:5] == ["/a/aider", "--model", "openai/m", "--model-metadata-file", "/w/m.json"]
    assert argv[argv.index("--test-cmd") + 1] == COMMAND and "--auto-test" in argv
    assert argv[argv.index("--message") + 1] == LEAP.request() and argv[-1] == "leap.py"
    assert "--no-git" in argv and "--yes-always" in argv and "--x" in argv
    flags = {arg for arg in argv if arg.startswith("--")}
    assert not flags & {"--edit-format", "--map-tokens", "--no-stream", "--read", "--file"}  # Aider's defaults
    assert "leap_test.py" not in argv


# ------------------------------------------------------------------------------------ judge
def test_the_judge_passes_the_reference_solution_and_fails_the_stub() -> None:
    assert versus.judge(LEAP, LEAP.solution_file.read_text(encoding="utf-8"), None) == (True, "9/9 tests")
    stub = (LEAP.folder / LEAP.stub_file).read_text(encoding="utf-8")
    assert versus.judge(LEAP, stub, None) == (False, "9 of 9 failed")
    assert versus.judge(LEAP, None, None) == (False, "no result")


def test_the_judge_fails_a_changed_test_file_whatever_the_tests_say() -> None:
    solution = LEAP.solution_file.read_text(encoding="utf-8")
    original = (LEAP.folder / LEAP.test_file).read_text(encoding="utf-8")
    assert versus.judge(LEAP, solution, original) == (True, "9/9 tests")
    assert versus.judge(LEAP, solution, original + "\n# ok\n") == (False, "test file changed")


def test_a_renamed_function_or_a_syntax_error_does_not_import() -> None:
    solution = LEAP.solution_file.read_text(encoding="utf-8")
    assert "def leap_year(" in solution
    assert versus.judge(LEAP, solution.replace("def leap_year(", "def is_leap_year("), None) == (
        False, "does not import")
    assert versus.judge(LEAP, solution + "\ndef broken(:\n", None) == (False, "does not import")
    go = BY_NAME["exercism/go-counting"]  # the track's own stub lacks the names its tests import
    assert versus.judge(go, (go.folder / go.stub_file).read_text(encoding="utf-8"), None) == (
        False, "does not import")


def test_the_judge_copies_the_support_file_the_tests_import() -> None:
    exercise = BY_NAME["exercism/error-handling"]
    assert versus.judge(exercise, exercise.solution_file.read_text(encoding="utf-8"), None) == (True, "5/5 tests")


def test_verdicts_read_from_pytest_summaries() -> None:
    assert versus.verdict_of(0, "....\n4 passed in 0.01s\n") == (True, "4/4 tests")
    assert versus.verdict_of(1, "F.\n1 failed, 1 passed in 0.02s\n") == (False, "1 of 2 failed")
    assert versus.verdict_of(1, "E.\n1 passed, 2 errors in 0.02s\n") == (False, "2 of 3 failed")
    assert versus.verdict_of(5, "no tests ran in 0.01s\n") == (False, "tests did not run")
    assert versus.verdict_of(0, "") == (False, "tests did not run")


# ------------------------------------------------------------------------------ idle server
class _Slow(http.server.BaseHTTPRequestHandler):
    delays: ClassVar[list[float]] = []
    bodies: ClassVar[list[dict[str, object]]] = []

    def do_POST(self) -> None:
        self.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        time.sleep(self.delays.pop(0) if self.delays else 0)
        payload = b'{"choices": []}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def model_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_the_idle_wait_polls_a_one_token_request_until_it_is_answered_quickly(model_server: str) -> None:
    _Slow.delays, _Slow.bodies = [0.6, 0.6], []
    idle, waited = versus.wait_idle(model_server, "openai/qwen", bound=10, probe=0.3, pause=0.01)
    assert idle and 0.5 < waited < 5 and len(_Slow.bodies) == 3  # two timed out, the third answered
    assert _Slow.bodies[-1] == {"model": "qwen", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
    assert not versus.tiny_request("http://127.0.0.1:9/v1", "m", 0.5)  # nothing listens: not idle


def test_the_idle_wait_is_bounded() -> None:
    calls: list[float] = []

    def busy(base: str, model: str, timeout: float) -> bool:
        calls.append(timeout)
        return False

    idle, waited = versus.wait_idle("http://x/v1", "m", bound=0.05, probe=1.5, pause=0.01, answers=busy)
    assert not idle and waited < 1 and calls and set(calls) == {1.5}


# ------------------------------------------------------------------------------ the report
def outcome(side: str, passed: bool, seconds: float, infra: str | None = None) -> versus.Outcome:
    return versus.Outcome(side=side, passed=passed, verdict="9/9 tests" if passed else "3 of 9 failed",
                          seconds=seconds, ending="done", infra=infra)


def test_sides_alternate_by_exercise_and_swap_in_the_second_run() -> None:
    assert [versus.order_for(i, 0)[0] for i in range(4)] == ["service", "aider", "service", "aider"]
    assert [versus.order_for(i, 1)[0] for i in range(4)] == ["aider", "service", "aider", "service"]


def test_totals_count_passes_time_and_infrastructure_errors_apart() -> None:
    run = {"a": {"service": outcome("service", True, 30), "aider": outcome("aider", False, 100)},
           "b": {"service": outcome("service", True, 50), "aider": outcome("aider", True, 60)},
           "c": {"service": outcome("service", False, 20, infra="task refused: 503"),
                 "aider": outcome("aider", True, 40)},
           "d": {"service": outcome("service", True, 100), "aider": outcome("aider", False, 200, infra="aider: x")}}
    totals = versus.totals(run)
    assert totals.service == versus.SideTotals(passed=3, runs=4, seconds=200, infra=1)
    assert totals.aider == versus.SideTotals(passed=2, runs=4, seconds=400, infra=1)
    assert totals.pass_ratio == 1.5 and totals.time_ratio == 0.5
    assert versus.totals({"a": {"service": outcome("service", True, 1)}}).pass_ratio is None


def test_the_table_puts_both_runs_side_by_side_with_each_runs_totals() -> None:
    first = {"leap": {"service": outcome("service", True, 30), "aider": outcome("aider", False, 100)}}
    second = {"leap": {"service": outcome("service", False, 40, infra="run error: offline"),
                       "aider": outcome("aider", True, 50)}}
    text = versus.table([first, second])
    lines = text.splitlines()
    assert lines[0] == "| exercise | run 1 service | run 1 bare aider | run 2 service | run 2 bare aider |"
    assert lines[2] == "| leap | PASS 30s | fail 100s (3 of 9 failed) | INFRA 40s (3 of 9 failed) | PASS 50s |"
    assert ("run 1: service passed 1/1 in 30 s, bare Aider 0/1 in 100 s; passes ×-, time ×0.30; "
            "infrastructure errors: service 0, aider 0") in text
    assert "run 2: service passed 0/1 in 40 s, bare Aider 1/1 in 50 s; passes ×0.00, time ×0.80; " \
           "infrastructure errors: service 1, aider 0" in text
    report = versus.report_json([first, second], {"model": "m"})
    assert report["runs"][1]["totals"]["service"]["infra"] == 1 and report["runs"][0]["totals"]["time_ratio"] == 0.3
    assert json.loads(json.dumps(report))["runs"][0]["exercises"]["leap"]["aider"]["verdict"] == "3 of 9 failed"


def test_only_selects_by_name_or_slug() -> None:
    exercises = load_exercises()
    assert [e.name for e in versus.select(exercises, "leap")] == ["leap", "exercism/leap"]
    assert [e.name for e in versus.select(exercises, "exercism/leap, bob")] == ["bob", "exercism/leap"]
    assert versus.select(exercises, None) == exercises


def test_the_default_test_command_runs_pytest(tmp_path: Path) -> None:
    command = versus.default_test_command()
    assert re.fullmatch(r"(python3|\S+python\S*) -m pytest -q", command)
    exercise: Exercise = LEAP
    exercise.copy_to(tmp_path)
    done = subprocess.run(shlex.split(command), cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env=versus.JUDGE_ENV, check=False)
    assert done.returncode == 1 and "9 failed" in done.stdout
