"""The orchestrator against bare Aider on Aider's own benchmark protocol, on the same model server.

    ./scripts/run.sh &                                  # the service on embedded defaults (:8090)
    .venv/bin/python -m bench.versus_aider --json /tmp/versus.json        # 42 exercises, 2 full runs
    .venv/bin/python -m bench.versus_aider --only leap,exercism/bowling --runs 1

The exercises (`bench/exercises/`): the twelve adapted earlier and 30 of the exercism Python track's
practice exercises drawn by a fixed seed (`bench.exercism`), the set Aider's benchmark uses. Each is
given to both sides as Aider's benchmark gives it (aider benchmark/benchmark.py `run_test_real`):
- the request is the instructions followed by Aider's `instructions_addendum` naming the stub
  (`Exercise.request()`, `bench.aider_prompts`);
- the stub and the test file (and a support file the tests import) sit at the root of the
  workspace; the stub is the file to edit, the tests are not shown to the agent.

**Bare Aider** (the Aider the service runs, `.cache/agents/aider-venv`) is set up as a careful user
would: the same model server, model name and model-metadata file the service's Aider gets, the
offline price map (`LITELLM_LOCAL_MODEL_COST_MAP=True`), its own defaults otherwise (streaming, its
edit format for the model), non-interactive flags, no git (the benchmark's `use_git=False`: the test
file is never added to its chat), the stub on its command line and `--auto-test --test-cmd <cmd>`.

**The service** gets what Kotlin sends: no `environment.testCommand`, `rules.require_tests: true`,
the same request text, a fresh git repository under its DATA_ROOT holding the workspace files. Its
every stop is answered by action (`answer_for`): a commit "yes", a push "no", a cloud model "no",
a budget extension and an epic's plan "yes", the recovery question "retry", the question of which
command runs the tests the same command bare Aider gets, any other question "Implement it exactly
as the instructions say.".

Fairness: before each side starts, the model server must answer a one-token request within a few
seconds (a timed-out side's generation must not run into the other's time; waited for up to
`--idle-wait`); the side that goes first alternates by exercise and by run; each side has the same
deadline (`--deadline`, then the run is cancelled or Aider's process group killed); `--runs 2` (the
default) repeats the whole set. Each result is judged by the exercise's original tests run afresh
(pytest, as Aider's benchmark runs them) on what the side left: the service's commit on its task
branch, the files in Aider's folder; a changed test file fails. A side that could not work (the
task refused, the model unreachable, a crash) is an infrastructure error, counted apart.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from app.cli.client import DEFAULT_URL, ServiceClient
from app.cli.events import EventStream, SseEvent
from app.cli.wire import RuleOverrides, approval_body, new_task_id, orchestrate_request, request_body, rules_with
from bench.exercises import Exercise, load_exercises

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DEADLINE = 420.0
DEFAULT_RUNS = 2
SIDES = ("service", "aider")
#: The model server is idle when a one-token request is answered within this many seconds.
IDLE_PROBE_SECONDS = 5.0
DEFAULT_IDLE_WAIT = 900.0
JUDGE_TIMEOUT = 120.0
#: The judge's pytest loads no plugin of this virtualenv (3 s of start-up each, and nothing the tests use).
JUDGE_ENV = os.environ | {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
#: What a user answers a question with (a clarification other than the test command).
USER_ANSWER = "Implement it exactly as the instructions say."
#: The answer to the recovery question after a failed step (ask_user: retry / skip_step / replanning / stop).
RECOVERY_ANSWER = "retry"
#: The answer to every approval gate the service asks, by its action name (app/graph/nodes/git_operations.py:
#: commit, push; app/llm/approval.py: budget, cloud_model; app/graph/nodes/approve_plan.py: epic_plan,
#: generative_design). The bench allows no cloud model and never pushes.
ANSWERS: dict[str, str] = {"commit": "yes", "push": "no", "cloud_model": "no", "budget": "yes",
                           "epic_plan": "yes", "generative_design": "yes"}
#: Bare Aider's flags beyond its defaults: only what running it unattended needs, plus `--no-git` (Aider's
#: benchmark runs its coder with `use_git=False`: no repository, so no file but the stub reaches its chat).
AIDER_FLAGS = ["--yes-always", "--no-git", "--no-pretty", "--no-check-update", "--no-analytics",
               "--no-show-release-notes", "--no-fancy-input", "--no-suggest-shell-commands", "--no-detect-urls"]
#: Context told to Aider of the model, as the service's entrypoint tells it (AIDER_CONTEXT_TOKENS there).
AIDER_CONTEXT_TOKENS = 32768
_COUNTS = re.compile(r"(\d+) (passed|failed|errors?)\b")
_NOT_IMPORTABLE = re.compile(r"\b(ImportError|ModuleNotFoundError|SyntaxError|IndentationError|NameError)\b")
_AIDER_TOKENS = re.compile(r"^Tokens: ([\d.,]+)(k?) sent, ([\d.,]+)(k?) received", re.MULTILINE)
_TEST_COMMAND_QUESTION = re.compile(
    r"(which|what)\b.{0,40}\bcommand\b.{0,40}\btests?\b|\btest command\b|příkaz.{0,40}test", re.IGNORECASE | re.DOTALL)
#: A side's failure that says nothing of the agent: the task refused, the model unreachable or busy, a crash.
_SERVICE_INFRA = re.compile(r"not started|offline|unreachable|busy|connection refused|internal server error|"
                            r"traceback|exception", re.IGNORECASE)
_AIDER_INFRA = re.compile(r"APIConnectionError|Connection refused|ServiceUnavailable|InternalServerError|"
                          r"Traceback \(most recent call last\)", re.IGNORECASE)


@dataclass
class NodeFigures:
    seconds: float = 0.0
    """Wall time inside the node (all its runs)."""
    runs: int = 0
    llm_calls: int | None = None
    llm_tokens: int | None = None
    llm_seconds: float | None = None


@dataclass
class Outcome:
    side: str
    passed: bool
    verdict: str
    """"9/9 tests", "3 of 9 failed", "test file changed", "does not import", "no commit", "timeout"…"""
    seconds: float
    ending: str
    """The run's status (done / error / timeout), or Aider's exit code (or timeout)."""
    infra: str | None = None
    """Why the side could not work (refused task, unreachable or busy model, crash); None when it could."""
    first: bool = False
    idle_wait: float = 0.0
    """Seconds waited for the model server to be idle before this side started."""
    llm_calls: int | None = None
    llm_tokens: int | None = None
    llm_seconds: float | None = None
    nodes: dict[str, NodeFigures] = field(default_factory=dict)
    programs: list[str] = field(default_factory=list)
    """The programs that ran the service's steps, from its `agent_start` events ("aider", "claude (cli)"…)."""


# ------------------------------------------------------------------------------- judging
def default_test_command() -> str:
    """What both sides are told runs the tests: pytest, as Aider's benchmark runs Python tests
    (`run_unit_tests`: `pytest` in the exercise's folder), with an interpreter that has it."""
    try:
        has_pytest = subprocess.run(["python3", "-c", "import pytest"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        has_pytest = False
    return "python3 -m pytest -q" if has_pytest else f"{shlex.quote(sys.executable)} -m pytest -q"


def verdict_of(returncode: int, output: str) -> tuple[bool, str]:
    """Pass or fail, and a short verdict, from pytest's exit code and output."""
    if "ERROR collecting" in output and _NOT_IMPORTABLE.search(output):
        return False, "does not import"
    counts: dict[str, int] = {}
    for number, kind in _COUNTS.findall(output.strip().splitlines()[-1] if output.strip() else ""):
        counts[kind.rstrip("s") if kind.startswith("error") else kind] = int(number)
    passed, failed = counts.get("passed", 0), counts.get("failed", 0) + counts.get("error", 0)
    if returncode == 0 and passed and not failed:
        return True, f"{passed}/{passed} tests"
    if passed + failed:
        return False, f"{failed} of {passed + failed} failed"
    return False, "tests did not run"


def judge(exercise: Exercise, stub: str | None, test_file: str | None) -> tuple[bool, str]:
    """The exercise's original tests (and support files) run afresh with pytest on the produced
    stub; a changed test file fails whatever the tests say."""
    original_test = (exercise.folder / exercise.test_file).read_text(encoding="utf-8")
    if test_file is not None and test_file != original_test:
        return False, "test file changed"
    if stub is None:
        return False, "no result"
    with tempfile.TemporaryDirectory(prefix=f"judge-{exercise.slug}-") as folder:
        exercise.copy_to(Path(folder))
        Path(folder, exercise.stub_file).write_text(stub, encoding="utf-8")
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", folder,
                exercise.test_file]
        try:
            done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=JUDGE_TIMEOUT,
                                  stdin=subprocess.DEVNULL, check=False, env=JUDGE_ENV)
        except subprocess.TimeoutExpired:
            return False, "tests timed out"
    return verdict_of(done.returncode, done.stdout + done.stderr)


# ------------------------------------------------------------------------- the model server
def tiny_request(model_base: str, model: str, timeout: float) -> bool:
    """Whether the server answers a one-token chat request within `timeout` seconds."""
    body = json.dumps({"model": model.split("/", 1)[1] if model.startswith("openai/") else model,
                       "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}).encode()
    request = urllib.request.Request(f"{model_base.rstrip('/')}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer local"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            return 200 <= int(response.status) < 300
    except (urllib.error.URLError, TimeoutError, OSError):
        return False


def wait_idle(model_base: str, model: str, *, bound: float, probe: float = IDLE_PROBE_SECONDS,
              pause: float = 2.0, answers: Callable[[str, str, float], bool] = tiny_request) -> tuple[bool, float]:
    """Wait until the model server answers a tiny request quickly (nothing else generating on its
    one slot), at most `bound` seconds; (idle, seconds waited)."""
    started = time.monotonic()
    while True:
        if answers(model_base, model, probe):
            return True, time.monotonic() - started
        if time.monotonic() - started + pause >= bound:
            return False, time.monotonic() - started
        time.sleep(pause)


# -------------------------------------------------------------------------------- service
def is_test_command_question(payload: Mapping[str, Any]) -> bool:
    """The service asking which command runs the tests (`require_tests` with none found)."""
    if payload.get("kind") == "test_command":
        return True
    text = " ".join(str(payload.get(key) or "") for key in ("description", "questions"))
    return bool(_TEST_COMMAND_QUESTION.search(text))


def is_recovery_question(payload: Mapping[str, Any]) -> bool:
    """ask_user's question after a failed step: it offers retry / skip_step / replanning / stop."""
    options = payload.get("options")
    return isinstance(options, list) and "retry" in options


def answer_for(payload: Mapping[str, Any], test_command: str) -> str:
    """What a user types at each stop, by the interrupt's action (and, for a question, its kind)."""
    action = str(payload.get("action") or "unknown")
    if action == "clarify":
        if is_test_command_question(payload):
            return test_command
        return RECOVERY_ANSWER if is_recovery_question(payload) else USER_ANSWER
    return ANSWERS.get(action, "no")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def folder_name(exercise: Exercise) -> str:
    return f"{exercise.name.replace('/', '-')}-{new_task_id()[:8]}"


def make_repository(exercise: Exercise, data_root: Path) -> tuple[Path, str]:
    """A fresh git repository under DATA_ROOT with the workspace files at its root, committed."""
    relative = f"bench/versus/{folder_name(exercise)}"
    repo = data_root / relative
    exercise.copy_to(repo)
    identity = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    git(repo, "init", "-q", "-b", "main")
    git(repo, *identity, "add", ".")
    git(repo, *identity, "commit", "-qm", exercise.slug)
    return repo, relative


def service_body(exercise: Exercise, relative: str, agent: str = "auto") -> dict[str, Any]:
    """The request as Kotlin sends it: no environment (so no test command), `require_tests` on.

    `agent` is Kotlin's `agent_preference`: "auto" lets the spec's table choose by complexity.
    """
    rules = rules_with(RuleOverrides(require_tests=True))
    request = orchestrate_request(task_id=new_task_id(), client_id="bench", project=exercise.slug,
                                  workspace_path=relative, query=exercise.request(), rules=rules, agent=agent)
    return request_body(request)


def run_service(client: ServiceClient, exercise: Exercise, data_root: Path, deadline: float,
                test_command: str, agent: str = "auto") -> Outcome:
    repo, relative = make_repository(exercise, data_root)
    started = time.monotonic()
    try:
        thread_id = client.start(service_body(exercise, relative, agent)).thread_id
    except Exception as exc:  # refused (HTTP error) or unreachable
        return Outcome(side="service", passed=False, verdict="refused", seconds=time.monotonic() - started,
                       ending="refused", infra=f"task refused: {exc}")
    timed_out = threading.Event()

    def cancel() -> None:
        timed_out.set()
        try:
            with ServiceClient(client.base_url) as other:
                other.cancel(thread_id)
        except Exception as exc:  # the run may have just ended
            print(f"    cancel failed: {exc}", flush=True)

    watchdog = threading.Timer(deadline, cancel)
    watchdog.start()
    try:
        programs: list[str] = []
        final, nodes = follow(client, thread_id, test_command, programs)
    except Exception as exc:
        return Outcome(side="service", passed=False, verdict="crash", seconds=time.monotonic() - started,
                       ending="crash", infra=f"stream failed: {exc}")
    finally:
        watchdog.cancel()
    seconds = time.monotonic() - started
    status = client.status(thread_id)
    ending = "timeout" if timed_out.is_set() else final.type
    branch = status.branch or str(final.data.get("branch") or "")
    stub = test_file = None
    if branch:
        stub = _show(repo, branch, exercise.stub_file)
        test_file = _show(repo, branch, exercise.test_file)
        if stub is not None and stub == (exercise.folder / exercise.stub_file).read_text(encoding="utf-8"):
            stub = None  # the branch holds no change of the module
    passed, verdict = judge(exercise, stub, test_file)
    if stub is None and verdict == "no result":
        verdict = "timeout" if ending == "timeout" else "no commit"
    error = " ".join(str(final.data.get("error") or status.error or "").split())
    infra = f"run error: {error[:200]}" if not passed and ending == "error" and _SERVICE_INFRA.search(error) else None
    outcome = Outcome(side="service", passed=passed, verdict=verdict, seconds=seconds, ending=ending, infra=infra,
                      nodes=nodes, programs=programs)
    extras = status.model_extra or {}
    outcome.llm_tokens = _int(extras.get("llm_tokens"))
    outcome.llm_calls = _int(extras.get("llm_calls"))
    _add_node_usage(outcome, extras.get("time_by_node"))
    model_seconds = [f.llm_seconds for f in outcome.nodes.values() if f.llm_seconds is not None]
    outcome.llm_seconds = sum(model_seconds) if model_seconds else None  # /status's llm_seconds is run time
    return outcome


def follow(client: ServiceClient, thread_id: str, test_command: str,
           programs: list[str] | None = None) -> tuple[SseEvent, dict[str, NodeFigures]]:
    """The stream to its end, answering every stop; the last event and the wall time per node.

    Each step's program (its `agent_start` event) is appended to `programs` when given.
    """
    stream = EventStream(client, thread_id)
    nodes: dict[str, NodeFigures] = {}
    while True:
        final = None
        for event in stream.events():
            if event.type == "node_end" and event.data.get("duration_ms") is not None:
                figures = nodes.setdefault(str(event.data["node"]), NodeFigures())
                figures.seconds += float(event.data["duration_ms"]) / 1000
                figures.runs += 1
            elif event.type == "agent_start" and programs is not None:
                programs.append(str(event.data.get("program") or event.data.get("agent") or "?"))
            elif event.type in ("done", "error", "approval_required"):
                final = event
        if final is None:
            continue  # the segment ended without an ending: follow the next one
        if final.type != "approval_required":
            return final, nodes
        raw = final.data.get("interrupt")
        payload: dict[str, Any] = raw if isinstance(raw, dict) else {}
        answer = answer_for(payload, test_command)
        action = str(payload.get("action") or "unknown")
        if action not in ANSWERS and action != "clarify":
            print(f"    ! unknown action {action!r}: answered {answer!r}", flush=True)
        description = " ".join(str(payload.get("description") or "").split())
        print(f"    ? {action}: {description[:140]!r} -> {answer!r}", flush=True)
        client.approve(thread_id, approval_body(answer, clarification=action == "clarify"))


def _show(repo: Path, branch: str, path: str) -> str | None:
    try:
        return git(repo, "show", f"{branch}:{path}")
    except subprocess.CalledProcessError:
        return None


def _add_node_usage(outcome: Outcome, text: Any) -> None:
    """Model calls, tokens and seconds per node from /status `time_by_node` (absent on older services)."""
    if not isinstance(text, str):
        return
    for part in text.split(";"):
        match = re.match(r"\s*(\w+) ([\d.]+) s(?: \((\d+) calls?, (\d+) tokens, ([\d.]+) s\))?", part)
        if match is None:
            continue
        figures = outcome.nodes.setdefault(match.group(1), NodeFigures())
        if match.group(3):
            figures.llm_calls, figures.llm_tokens = int(match.group(3)), int(match.group(4))
            figures.llm_seconds = float(match.group(5))


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------------------------- aider
def model_metadata(model: str, tokens: int = AIDER_CONTEXT_TOKENS) -> dict[str, Any]:
    """The model-metadata file the service's entrypoint writes for its Aider (`aider_model_metadata`)."""
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    return {model: {"max_input_tokens": tokens, "max_tokens": tokens, "max_output_tokens": min(tokens, 8192),
                    "input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                    "litellm_provider": provider, "mode": "chat"}}


def aider_argv(aider: Path, exercise: Exercise, model: str, metadata: Path, test_command: str,
               extra: Sequence[str] = ()) -> list[str]:
    return [str(aider), "--model", model, "--model-metadata-file", str(metadata), *AIDER_FLAGS,
            "--auto-test", "--test-cmd", test_command, *extra, "--message", exercise.request(), exercise.stub_file]


def aider_env(model_base: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The model server as the service hands it to its Aider (app/agents/local_agents.py), and the
    offline price map (the entrypoint's `agent_env`)."""
    return dict(os.environ if base is None else base) | {
        "OPENAI_API_BASE": model_base, "OPENAI_API_KEY": "local", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def run_aider(exercise: Exercise, aider: Path, model: str, model_base: str, deadline: float, work: Path,
              test_command: str, extra: Sequence[str] = ()) -> Outcome:
    folder = work / folder_name(exercise)
    exercise.copy_to(folder)  # no git: the benchmark's `use_git=False`
    metadata = folder.parent / f"{folder.name}.model-metadata.json"
    metadata.write_text(json.dumps(model_metadata(model)), encoding="utf-8")
    log_path = folder.parent / f"{folder.name}.aider.log"
    started = time.monotonic()
    with log_path.open("w") as log:
        try:
            process = subprocess.Popen(aider_argv(aider, exercise, model, metadata, test_command, extra), cwd=folder,
                                       stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=aider_env(model_base), start_new_session=True)
        except OSError as exc:
            return Outcome(side="aider", passed=False, verdict="crash", seconds=0.0, ending="crash",
                           infra=f"aider did not start: {exc}")
        try:
            code: int | str = process.wait(deadline)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # its stream closes: the server stops generating
            process.wait()
            code = "timeout"
    seconds = time.monotonic() - started
    output = log_path.read_text(errors="replace")
    stub = _read(folder / exercise.stub_file)
    if stub is not None and stub == (exercise.folder / exercise.stub_file).read_text(encoding="utf-8"):
        stub = None  # left the stub as it was
    passed, verdict = judge(exercise, stub, _read(folder / exercise.test_file) or "")
    if code == "timeout":
        verdict = f"timeout ({verdict})"
    infra = None
    if not passed and (match := _AIDER_INFRA.search(output)):
        infra = f"aider: {match.group(0)} (exit {code})"
    outcome = Outcome(side="aider", passed=passed, verdict=verdict, seconds=seconds, ending=str(code), infra=infra)
    usage = _AIDER_TOKENS.findall(output)
    outcome.llm_calls = len(usage)
    outcome.llm_tokens = sum(_tokens(sent, k1) + _tokens(received, k2) for sent, k1, received, k2 in usage)
    return outcome


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _tokens(number: str, thousands: str) -> int:
    value = float(number.replace(",", ""))
    return int(value * 1000) if thousands else int(value)


# -------------------------------------------------------------------------------- report
def order_for(index: int, run: int) -> tuple[str, str]:
    """Which side goes first: alternating by exercise, and the other way round in the next run."""
    return ("service", "aider") if (index + run) % 2 == 0 else ("aider", "service")


@dataclass(frozen=True)
class SideTotals:
    passed: int
    runs: int
    seconds: float
    infra: int


@dataclass(frozen=True)
class Totals:
    service: SideTotals
    aider: SideTotals

    @property
    def pass_ratio(self) -> float | None:
        """Service passes over bare Aider's (None when Aider passed none)."""
        return self.service.passed / self.aider.passed if self.aider.passed else None

    @property
    def time_ratio(self) -> float | None:
        """Service total wall time over bare Aider's."""
        return self.service.seconds / self.aider.seconds if self.aider.seconds else None


def totals(results: Mapping[str, Mapping[str, Outcome]]) -> Totals:
    def side(name: str) -> SideTotals:
        outcomes = [sides[name] for sides in results.values() if name in sides]
        return SideTotals(passed=sum(o.passed for o in outcomes), runs=len(outcomes),
                          seconds=sum(o.seconds for o in outcomes), infra=sum(o.infra is not None for o in outcomes))

    return Totals(service=side("service"), aider=side("aider"))


def cell(outcome: Outcome | None) -> str:
    if outcome is None:
        return "-"
    mark = "PASS" if outcome.passed else ("INFRA" if outcome.infra else "fail")
    text = f"{mark} {outcome.seconds:.0f}s"
    return text if outcome.passed else f"{text} ({outcome.verdict})"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(runs: Sequence[Mapping[str, Mapping[str, Outcome]]]) -> str:
    """A Markdown table: one row per exercise, service and bare Aider of every run side by side,
    then the totals of each run."""
    header = ["exercise"] + [f"run {n} {side}" for n in range(1, len(runs) + 1) for side in ("service", "bare aider")]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    names = list(dict.fromkeys(name for run in runs for name in run))
    for name in names:
        cells = [cell(run.get(name, {}).get(side)) for run in runs for side in SIDES]
        lines.append("| " + " | ".join([name, *cells]) + " |")
    for number, run in enumerate(runs, 1):
        figures = totals(run)
        s, a = figures.service, figures.aider
        lines.append(f"\nrun {number}: service passed {s.passed}/{s.runs} in {s.seconds:.0f} s, bare Aider "
                     f"{a.passed}/{a.runs} in {a.seconds:.0f} s; passes ×{_ratio(figures.pass_ratio)}, "
                     f"time ×{_ratio(figures.time_ratio)}; infrastructure errors: service {s.infra}, aider {a.infra}")
    return "\n".join(lines)


def node_line(outcome: Outcome) -> str:
    parts = []
    for node, figures in outcome.nodes.items():
        text = f"{node} {figures.seconds:.1f}s"
        if figures.llm_calls:
            text += f" ({figures.llm_calls} calls, {figures.llm_tokens} tok, {figures.llm_seconds:.0f}s model)"
        parts.append(text)
    return "    nodes: " + "; ".join(parts)


def report_json(runs: Sequence[Mapping[str, Mapping[str, Outcome]]], meta: Mapping[str, Any]) -> dict[str, Any]:
    """Every outcome and each run's totals (with the two ratios), for `--json`."""
    out: list[dict[str, Any]] = []
    for number, run in enumerate(runs, 1):
        figures = totals(run)
        out.append({"run": number,
                    "totals": asdict(figures) | {"pass_ratio": figures.pass_ratio, "time_ratio": figures.time_ratio},
                    "exercises": {name: {side: asdict(o) for side, o in sides.items()} for name, sides in run.items()}})
    return {"meta": dict(meta), "runs": out}


def embedded_model(home: Path) -> tuple[str, str] | None:
    """(api_base, litellm model) of the embedded model the launcher started, from its state file."""
    try:
        state = json.loads((home / "embedded-llm.json").read_text())
        return str(state["api_base"]), str(state["model"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def select(exercises: list[Exercise], only: str | None) -> list[Exercise]:
    """`--only`: names (`leap`, `exercism/leap`) or slugs (`leap` names both)."""
    if not only:
        return exercises
    wanted = {s.strip() for s in only.split(",") if s.strip()}
    return [e for e in exercises if e.name in wanted or e.slug in wanted]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL, help="the service (default %(default)s)")
    parser.add_argument("--dev-home", type=Path, default=ROOT / ".data",
                        help="the launcher's home: DATA_ROOT is its workspaces/, the model its embedded-llm.json")
    parser.add_argument("--data-root", type=Path, help="the service's DATA_ROOT (default: <dev-home>/workspaces)")
    parser.add_argument("--model-base", help="the model server's OpenAI API base")
    parser.add_argument("--model", help="the model as litellm names it (default: the embedded model's)")
    parser.add_argument("--aider", type=Path, default=ROOT / ".cache" / "agents" / "aider-venv" / "bin" / "aider")
    parser.add_argument("--aider-args", default="", help="extra arguments for bare Aider (shell words)")
    parser.add_argument("--only", help="comma-separated exercises (leap, exercism/leap; a slug names both)")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="full runs, reported side by side")
    parser.add_argument("--deadline", type=float, default=DEFAULT_DEADLINE, help="seconds per exercise and side")
    parser.add_argument("--idle-wait", type=float, default=DEFAULT_IDLE_WAIT,
                        help="at most this long for the model server to be idle before a side starts")
    parser.add_argument("--test-cmd", help="the tests' command both sides get (default: python3 -m pytest -q)")
    parser.add_argument("--sides", default="service,aider", help="which sides to run (service, aider)")
    parser.add_argument("--agent", default="auto",
                        help="the service's agent_preference (aider, openhands, claude; default: the spec's table)")
    parser.add_argument("--json", type=Path, help="write every outcome and the totals to this file")
    args = parser.parse_args()
    sides = [s for s in SIDES if s in {part.strip() for part in args.sides.split(",")}]
    exercises = select(load_exercises(), args.only)
    found = embedded_model(args.dev_home)
    model_base = args.model_base or (found[0] if found else None)
    model = args.model or (found[1] if found else "openai/qwen2.5-coder-1.5b")
    if model_base is None or ("aider" in sides and not args.aider.is_file()):
        parser.error("needs the model server (--model-base, or ./scripts/run.sh's embedded-llm.json) and, for bare "
                     "Aider, the Aider of ./scripts/run.sh (--aider)")
    test_command = args.test_cmd or default_test_command()
    data_root = (args.data_root or args.dev_home / "workspaces").resolve()
    work = Path(tempfile.mkdtemp(prefix="versus-aider-"))
    print(f"{len(exercises)} exercises × {args.runs} runs; model {model} at {model_base}; deadline "
          f"{args.deadline:.0f}s; tests: {test_command}; service agent {args.agent}; work {work}", flush=True)
    runs: list[dict[str, dict[str, Outcome]]] = []
    with ServiceClient(args.url, timeout=60.0) as client:
        for run in range(args.runs):
            results: dict[str, dict[str, Outcome]] = {}
            runs.append(results)
            for index, exercise in enumerate(exercises):
                order = [side for side in order_for(index, run) if side in sides]
                print(f"== run {run + 1}, {exercise.name} ({' first, then '.join(order)})", flush=True)
                results[exercise.name] = {}
                for side in order:
                    idle, waited = wait_idle(model_base, model, bound=args.idle_wait)
                    if not idle:
                        print(f"   the model server is still busy after {waited:.0f}s; starting anyway", flush=True)
                    if side == "aider":
                        outcome = run_aider(exercise, args.aider, model, model_base, args.deadline, work,
                                            test_command, shlex.split(args.aider_args))
                    else:
                        outcome = run_service(client, exercise, data_root, args.deadline, test_command, args.agent)
                    outcome.first, outcome.idle_wait = side == order[0], waited
                    if not idle and not outcome.passed and outcome.infra is None:
                        outcome.infra = f"model server busy for {waited:.0f}s before the start"
                    results[exercise.name][side] = outcome
                    print(f"   {side}: {outcome.verdict} in {outcome.seconds:.0f}s ({outcome.ending})"
                          + (f" by {', '.join(dict.fromkeys(outcome.programs))}" if outcome.programs else "")
                          + (f" INFRA: {outcome.infra}" if outcome.infra else ""), flush=True)
                    if outcome.nodes:
                        print(node_line(outcome), flush=True)
    print()
    print(table(runs))
    if args.json:
        meta = {"model": model, "model_base": model_base, "agent": args.agent, "test_command": test_command,
                "deadline": args.deadline,
                "exercises": [e.name for e in exercises], "work": str(work)}
        args.json.write_text(json.dumps(report_json(runs, meta), indent=2))
    print(f"\nAider's logs and folders: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
