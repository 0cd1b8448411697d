"""One real code request on embedded defaults: wall time per node and in total, and the result.

    ./scripts/run.sh &                                 # the service on embedded defaults (:8090)
    .venv/bin/python -m bench.embedded_run             # the subtract() request on a tiny repository
    .venv/bin/python -m bench.embedded_run --request "Přidej do calc.py funkci multiply(a, b), která vrátí \
        součin a a b" --check "multiply(4, 3)"

Creates a small git repository (calc.py with add(), a test file) under the service's DATA_ROOT,
dispatches the request exactly as Kotlin does (the terminal client's request, stream and approval
code, `app/cli/`), follows the SSE stream, approves every gate
("ano"), and prints each node's wall time (from the stream's node_start / node_end events), the
total, the final status, whether a commit landed on the task branch and whether the new function
works (`--check`, called in the committed file, not taken from the agent's word).
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
import uuid
from pathlib import Path

from app.cli.client import DEFAULT_URL, ServiceClient
from app.cli.events import EventStream, SseEvent
from app.cli.stops import Interrupt
from app.cli.wire import approval_body, new_task_id, orchestrate_request, request_body

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REQUEST = "Add a subtract(a, b) function to calc.py that returns a - b"
CALC = 'def add(a, b):\n    """Return the sum of a and b."""\n    return a + b\n'
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
STREAM_DEADLINE = 3600.0


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def make_repo(data_root: Path) -> tuple[Path, str]:
    relative = f"bench/calc-{uuid.uuid4().hex[:8]}"
    repo = data_root / relative
    repo.mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(TESTS)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "add", ".")
    git(repo, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "calc")
    return repo, relative


def follow(client: ServiceClient, thread_id: str) -> tuple[SseEvent, list[tuple[str, str, float]]]:
    """Follow the stream to the end, approving every gate; returns the last event and the node times."""
    stream = EventStream(client, thread_id)
    timings: list[tuple[str, str, float]] = []
    where: dict[str, str] = {}
    deadline = time.monotonic() + STREAM_DEADLINE
    while time.monotonic() < deadline:
        final = None
        for event in stream.events():
            data = event.data
            if event.type == "node_start":
                where[data["node"]] = (f"goal {data['goal_index'] + 1}/{data['total_goals']} "
                                       f"step {data['step_index'] + 1}/{data['total_steps']} "
                                       f"attempt {data['attempt']}") if data["total_steps"] else ""
                print(f"  … {data['node']:<16} {data.get('message', '')[:90]}", flush=True)
            elif event.type == "node_end" and data.get("duration_ms") is not None:
                timings.append((data["node"], where.get(data["node"], ""), data["duration_ms"] / 1000))
            elif event.type in ("done", "error", "approval_required"):
                final = event
        if final is None:
            continue  # the segment ended without an ending: follow the next one from the cursor
        if final.type != "approval_required":
            return final, timings
        interrupt = Interrupt.from_payload(final.data.get("interrupt"))
        print(f"  ? {interrupt.action}: {interrupt.description[:300]!r} → ano", flush=True)
        client.approve(thread_id, approval_body("ano", clarification=interrupt.is_clarification))
    raise TimeoutError(f"no ending within {STREAM_DEADLINE:.0f} s")


def check_call(repo: Path, branch: str, call: str) -> str:
    """Import calc.py as committed on the branch and evaluate `call` (e.g. `subtract(5, 3)`) in it."""
    try:
        source = git(repo, "show", f"{branch}:calc.py")
    except subprocess.CalledProcessError:
        return f"no calc.py on {branch}"
    target = repo.parent / f"{repo.name}-calc_check.py"
    target.write_text(source)
    try:
        spec = importlib.util.spec_from_file_location("calc_check", target)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return f"{call} = {eval(call, vars(module))!r}"
    except Exception as exc:  # the model's code: anything can be wrong with it
        return f"{type(exc).__name__}: {exc}"
    finally:
        target.unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--data-root", type=Path, default=ROOT / ".data" / "workspaces",
                        help="the service's DATA_ROOT (default: the launcher's)")
    parser.add_argument("--request", default=DEFAULT_REQUEST)
    parser.add_argument("--check", default="subtract(5, 3)", help="a call to evaluate in the committed calc.py")
    args = parser.parse_args()
    repo, relative = make_repo(args.data_root)
    request = orchestrate_request(task_id=new_task_id(), client_id="bench", project="calc", workspace_path=relative,
                                  query=args.request)
    with ServiceClient(args.url) as client:
        agents = (client.health().model_extra or {}).get("agents", {})
        print(f"request: {args.request}\nrepository: {repo}\nagents: {agents.get('aider', '?')}", flush=True)
        started = time.monotonic()
        thread_id = client.start(request_body(request)).thread_id
        final, timings = follow(client, thread_id)
        total = time.monotonic() - started
        status = client.status(thread_id)
    print(f"\n{'node':<16} {'where':<30} seconds")
    for node, where, seconds in timings:
        print(f"{node:<16} {where:<30} {seconds:7.1f}")
    print(f"{'total (wall)':<47} {total:7.1f}")
    branch = status.branch or final.data.get("branch") or ""
    commits = git(repo, "log", "--oneline", f"main..{branch}").strip().splitlines() if branch else []
    print(f"\nstatus: {final.type}  branch: {branch or '-'}  commits on it: {len(commits)}")
    print("summary: " + str(final.data.get("summary") or final.data.get("error") or "")[:600])
    if commits:
        print("check: " + check_call(repo, branch, args.check) + "   (" + commits[0] + ")")
    return 0 if final.type == "done" and commits else 1


if __name__ == "__main__":
    sys.exit(main())
