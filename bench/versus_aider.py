"""The orchestrator against bare Aider, side by side, on the same model and the same requests.

    ./scripts/run.sh &                                  # the service on embedded defaults (:8090)
    .venv/bin/python -m bench.versus_aider              # all exercises of bench/exercises/
    .venv/bin/python -m bench.versus_aider --only leap,bob --json /tmp/result.json

Each exercise (a stub module, its unittest file, a page of instructions) is solved twice with the
same request text (`Exercise.request()`):
- **the service** with `require_tests` and the exercise's test command, on a git repository under
  the service's DATA_ROOT, its gates answered as a user would (a commit: "yes"; a question after a
  failure or a clarification: "Implement it exactly as the instructions say."), judged on what it
  committed on the task branch;
- **bare Aider** (the same Aider the service runs, `.cache/agents/aider-venv`) with its own test
  loop, `--auto-test --test-cmd <the exercise's test command>`, against the same model server,
  judged on the files it left.

A result passes when the exercise's original tests pass on it, run afresh here; a changed test
file is a failure whatever the tests say. Each side has the same deadline (`--deadline`, then the
run is cancelled or Aider killed). Printed per exercise and in total: pass/fail and wall time of
both, the time ratio, the service's model calls, tokens and model seconds, and its seconds per
node. The model server is the embedded one the launcher started (read from its state file,
`.data/embedded-llm.json`) unless `--model-base` names another.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from app.cli.client import DEFAULT_URL, ServiceClient
from app.cli.events import EventStream, SseEvent
from app.cli.stops import Interrupt
from app.cli.wire import RuleOverrides, approval_body, new_task_id, orchestrate_request, request_body, rules_with
from bench.exercises import Exercise, load_exercises

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DEADLINE = 900.0
#: What a user answers a question with (a clarification, or "what now?" after a failed step).
USER_ANSWER = "Implement it exactly as the instructions say."
#: Aider's flags as the service's agent runs it (app/agents, the entrypoint), plus its own test loop.
AIDER_FLAGS = ["--edit-format", "whole", "--map-tokens", "0", "--no-gitignore", "--yes-always", "--no-auto-commits",
               "--no-dirty-commits", "--no-pretty", "--no-check-update", "--no-analytics", "--no-show-model-warnings",
               "--no-show-release-notes", "--no-fancy-input", "--no-suggest-shell-commands", "--no-detect-urls"]
_RAN = re.compile(r"^Ran (\d+) tests? in", re.MULTILINE)
_FAILED = re.compile(r"^FAILED \((.*)\)$", re.MULTILINE)
_AIDER_TOKENS = re.compile(r"^Tokens: ([\d.,]+)(k?) sent, ([\d.,]+)(k?) received", re.MULTILINE)


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
    """"9/9 tests", "3 of 9 failed", "test file changed", "no commit", "timeout"…"""
    seconds: float
    ending: str
    """The run's status (done / error / timeout), or Aider's exit code."""
    llm_calls: int | None = None
    llm_tokens: int | None = None
    llm_seconds: float | None = None
    nodes: dict[str, NodeFigures] = field(default_factory=dict)


# ------------------------------------------------------------------------------- judging
def judge(exercise: Exercise, stub: str | None, test_file: str | None) -> tuple[bool, str]:
    """Run the exercise's original tests on the produced module; a changed test file fails."""
    original_test = (exercise.folder / exercise.test_file).read_text(encoding="utf-8")
    if test_file is not None and test_file != original_test:
        return False, "test file changed"
    if stub is None:
        return False, "no result"
    with tempfile.TemporaryDirectory(prefix=f"judge-{exercise.slug}-") as folder:
        Path(folder, exercise.stub_file).write_text(stub, encoding="utf-8")
        Path(folder, exercise.test_file).write_text(original_test, encoding="utf-8")
        try:
            done = subprocess.run(exercise.test_command(), cwd=folder, capture_output=True, text=True, timeout=60,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return False, "tests timed out"
    output = done.stdout + done.stderr
    ran = int(match.group(1)) if (match := _RAN.search(output)) else 0
    if done.returncode == 0 and ran:
        return True, f"{ran}/{ran} tests"
    failed = _FAILED.search(output)
    counts = sum(int(n) for n in re.findall(r"=(\d+)", failed.group(1))) if failed else 0
    return False, f"{counts} of {ran} failed" if ran else "tests did not run"


# -------------------------------------------------------------------------------- service
def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def make_repository(exercise: Exercise, data_root: Path) -> tuple[Path, str]:
    relative = f"bench/versus/{exercise.slug}-{new_task_id()[:8]}"
    repo = data_root / relative
    exercise.copy_to(repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "add", ".")
    git(repo, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", exercise.slug)
    return repo, relative


def answer_for(interrupt: Interrupt) -> str:
    """What a user types at each kind of stop."""
    if interrupt.is_clarification:
        return USER_ANSWER
    return "no" if interrupt.action in ("push", "cloud_approval") else "yes"


def run_service(client: ServiceClient, exercise: Exercise, data_root: Path, deadline: float) -> Outcome:
    repo, relative = make_repository(exercise, data_root)
    rules = rules_with(RuleOverrides(require_tests=True))
    request = orchestrate_request(task_id=new_task_id(), client_id="bench", project=exercise.slug,
                                  workspace_path=relative, query=exercise.request(), rules=rules)
    body = request_body(request) | {"environment": {"testCommand": " ".join(exercise.test_command())}}
    started = time.monotonic()
    thread_id = client.start(body).thread_id
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
        final, nodes = follow(client, thread_id)
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
        verdict = "no commit" if ending != "timeout" else "timeout"
    outcome = Outcome(side="service", passed=passed, verdict=verdict, seconds=seconds, ending=ending, nodes=nodes)
    extras = status.model_extra or {}
    outcome.llm_tokens = _int(extras.get("llm_tokens"))
    outcome.llm_calls = _int(extras.get("llm_calls"))
    _add_node_usage(outcome, extras.get("time_by_node"))
    model_seconds = [f.llm_seconds for f in outcome.nodes.values() if f.llm_seconds is not None]
    outcome.llm_seconds = sum(model_seconds) if model_seconds else None  # /status's llm_seconds is run time
    return outcome


def follow(client: ServiceClient, thread_id: str) -> tuple[SseEvent, dict[str, NodeFigures]]:
    """The stream to its end, answering every stop; the last event and the wall time per node."""
    stream = EventStream(client, thread_id)
    nodes: dict[str, NodeFigures] = {}
    while True:
        final = None
        for event in stream.events():
            if event.type == "node_end" and event.data.get("duration_ms") is not None:
                figures = nodes.setdefault(str(event.data["node"]), NodeFigures())
                figures.seconds += float(event.data["duration_ms"]) / 1000
                figures.runs += 1
            elif event.type in ("done", "error", "approval_required"):
                final = event
        if final is None:
            continue  # the segment ended without an ending: follow the next one
        if final.type != "approval_required":
            return final, nodes
        interrupt = Interrupt.from_payload(final.data.get("interrupt"))
        answer = answer_for(interrupt)
        print(f"    ? {interrupt.action}: {' '.join(interrupt.description.split())[:140]!r} -> {answer!r}", flush=True)
        client.approve(thread_id, approval_body(answer, clarification=interrupt.is_clarification))


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
def run_aider(exercise: Exercise, aider: Path, model: str, model_base: str, deadline: float, work: Path) -> Outcome:
    folder = work / f"{exercise.slug}-{new_task_id()[:8]}"
    exercise.copy_to(folder)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "add", ".")
    git(folder, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", exercise.slug)
    argv = [str(aider), "--model", model, "--openai-api-base", model_base, "--openai-api-key", "local", *AIDER_FLAGS,
            "--auto-test", "--test-cmd", " ".join(exercise.test_command()), "--message", exercise.request(),
            exercise.stub_file]
    env = os.environ | {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    started = time.monotonic()
    with (folder.parent / f"{folder.name}.aider.log").open("w") as log:
        process = subprocess.Popen(argv, cwd=folder, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=env, start_new_session=True)
        try:
            code: int | str = process.wait(deadline)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            code = "timeout"
    seconds = time.monotonic() - started
    output = (folder.parent / f"{folder.name}.aider.log").read_text(errors="replace")
    stub = _read(folder / exercise.stub_file)
    test_file = _read(folder / exercise.test_file) or ""
    passed, verdict = judge(exercise, stub, test_file)
    outcome = Outcome(side="aider", passed=passed, verdict=verdict if code != "timeout" else f"timeout ({verdict})",
                      seconds=seconds, ending=str(code))
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
def row(exercise: str, service: Outcome | None, aider: Outcome | None) -> str:
    def side(outcome: Outcome | None) -> str:
        if outcome is None:
            return f"{'-':<28}"
        mark = "PASS" if outcome.passed else "fail"
        return f"{mark} {outcome.seconds:6.0f}s {outcome.verdict[:16]:<16}"

    ratio = f"{service.seconds / aider.seconds:5.2f}" if service and aider and aider.seconds else "    -"
    calls = "-" if service is None or service.llm_calls is None else str(service.llm_calls)
    tokens = "-" if service is None or service.llm_tokens is None else str(service.llm_tokens)
    model_s = "-" if service is None or service.llm_seconds is None else f"{service.llm_seconds:.0f}"
    return f"{exercise:<20} {side(service)} {side(aider)} {ratio}  {calls:>5} {tokens:>7} {model_s:>6}"


def node_line(outcome: Outcome) -> str:
    parts = []
    for node, figures in outcome.nodes.items():
        text = f"{node} {figures.seconds:.1f}s"
        if figures.llm_calls:
            text += f" ({figures.llm_calls} calls, {figures.llm_tokens} tok, {figures.llm_seconds:.0f}s model)"
        parts.append(text)
    return "    nodes: " + "; ".join(parts)


def embedded_model(home: Path) -> tuple[str, str] | None:
    """(api_base, litellm model) of the embedded model the launcher started, from its state file."""
    try:
        state = json.loads((home / "embedded-llm.json").read_text())
        return str(state["api_base"]), str(state["model"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL, help="the service (default %(default)s)")
    parser.add_argument("--dev-home", type=Path, default=ROOT / ".data",
                        help="the launcher's home: DATA_ROOT is its workspaces/, the model its embedded-llm.json")
    parser.add_argument("--data-root", type=Path, help="the service's DATA_ROOT (default: <dev-home>/workspaces)")
    parser.add_argument("--model-base", help="the model server's OpenAI API base for bare Aider")
    parser.add_argument("--model", help="the model as litellm names it (default: the embedded model's)")
    parser.add_argument("--aider", type=Path, default=ROOT / ".cache" / "agents" / "aider-venv" / "bin" / "aider")
    parser.add_argument("--only", help="comma-separated exercise slugs")
    parser.add_argument("--deadline", type=float, default=DEFAULT_DEADLINE, help="seconds per run and side")
    parser.add_argument("--sides", default="service,aider", help="which sides to run (service, aider)")
    parser.add_argument("--json", type=Path, help="write every outcome to this file")
    args = parser.parse_args()
    sides = {s.strip() for s in args.sides.split(",") if s.strip()}
    exercises = load_exercises()
    if args.only:
        wanted = {s.strip() for s in args.only.split(",")}
        exercises = [e for e in exercises if e.slug in wanted]
    found = embedded_model(args.dev_home)
    model_base = args.model_base or (found[0] if found else None)
    model = args.model or (found[1] if found else "openai/qwen2.5-coder-1.5b")
    if "aider" in sides and (model_base is None or not args.aider.is_file()):
        parser.error("bare Aider needs --model-base (no embedded-llm.json) and the Aider of ./scripts/run.sh")
    data_root = (args.data_root or args.dev_home / "workspaces").resolve()
    work = Path(tempfile.mkdtemp(prefix="versus-aider-"))
    print(f"{len(exercises)} exercises; model {model} at {model_base}; deadline {args.deadline:.0f}s; work {work}")
    results: dict[str, dict[str, Outcome]] = {}
    with ServiceClient(args.url, timeout=60.0) as client:
        for exercise in exercises:
            print(f"== {exercise.slug}", flush=True)
            results[exercise.slug] = {}
            if "aider" in sides and model_base:
                outcome = run_aider(exercise, args.aider, model, model_base, args.deadline, work)
                results[exercise.slug]["aider"] = outcome
                print(f"   aider:   {outcome.verdict} in {outcome.seconds:.0f}s", flush=True)
            if "service" in sides:
                outcome = run_service(client, exercise, data_root, args.deadline)
                results[exercise.slug]["service"] = outcome
                print(f"   service: {outcome.verdict} in {outcome.seconds:.0f}s ({outcome.ending})", flush=True)
    print()
    print(f"{'exercise':<20} {'service':<28} {'bare aider':<28} ratio  calls  tokens model_s")
    for slug, outcomes in results.items():
        print(row(slug, outcomes.get("service"), outcomes.get("aider")))
        if "service" in outcomes and outcomes["service"].nodes:
            print(node_line(outcomes["service"]))
    service_runs = [o["service"] for o in results.values() if "service" in o]
    aider_runs = [o["aider"] for o in results.values() if "aider" in o]
    total_s, total_a = sum(o.seconds for o in service_runs), sum(o.seconds for o in aider_runs)
    print(f"\ntotal: service passed {sum(o.passed for o in service_runs)}/{len(service_runs)} in {total_s:.0f}s; "
          f"bare aider passed {sum(o.passed for o in aider_runs)}/{len(aider_runs)} in {total_a:.0f}s"
          + (f"; time ratio {total_s / total_a:.2f}" if total_a and service_runs else ""))
    calls = [o.llm_calls for o in service_runs if o.llm_calls is not None]
    if calls:
        print(f"service model calls: {sum(calls)} in all, {max(calls)} at most in one run")
    if args.json:
        args.json.write_text(json.dumps({slug: {side: asdict(o) for side, o in outcomes.items()}
                                         for slug, outcomes in results.items()}, indent=2))
    print(f"Aider's logs and workspaces: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
