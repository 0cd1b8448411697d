"""The terminal client (`python -m app.cli`) as a subprocess against the real service process:
nx-27017, the scripted LLM, the scripted agent, and the client's own push receiver in the
Kotlin server's place (the service's KOTLIN_SERVER_URL points at the client's `--receive` port).
One service for the module; each test works on its own repository.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.llm_server import Reply
from tests.fixtures.service import ROOT, ServiceProcess, service_env
from tests.support import (
    classification,
    code_task_script,
    free_port,
    git,
    goals_json,
    make_git_repo,
    node_marker,
    steps_json,
)

RUN_KEYS = ["thread_id", "task_id", "client_id", "status", "percent", "branch", "summary", "error", "request",
            "waiting", "created_at", "updated_at", "usage"]


@pytest.fixture(scope="module")
def receive_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def cli_service(mongo_server: Any, llm_server: Any, kb_server: Any, data_root: Path, receive_port: int,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    env = service_env(mongo_url=mongo_server.url, llm_url=llm_server.url, kb_url=kb_server.url,
                      kotlin_url=f"http://127.0.0.1:{receive_port}", data_root=data_root,
                      recovery_max_attempts=1)  # a failing step is asked about after its first attempt
    proc = ServiceProcess(env=env, log_path=tmp_path_factory.mktemp("svc") / "service-cli.log").start()
    yield proc
    proc.stop()


def jervis(*args: str | Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app.cli", *map(str, args)], cwd=ROOT, input=stdin, text=True,
                          capture_output=True, timeout=180)


def run(service: ServiceProcess, repo: Path, data_root: Path, port: int, *extra: str,
        stdin: str = "") -> subprocess.CompletedProcess[str]:
    return jervis("run", "--repo", repo, "--url", service.url, "--data-root", data_root,
                  "--receive", f"127.0.0.1:{port}", *extra, "Přidej endpoint /health", stdin=stdin)


def thread_of(result: subprocess.CompletedProcess[str]) -> str:
    found = re.search(r"^thread: (\S+)$", result.stdout, re.MULTILINE)
    assert found, result.stdout
    return found.group(1)


def push_failures(service: ServiceProcess) -> float:
    """Failed push attempts (a push is retried until it expires, so attempts are what show a refusal)."""
    text = httpx.get(f"{service.url}/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("jervis_kotlin_push_attempt_failures_total{"))


def test_run_with_yes_ends_done_with_the_branch_in_the_users_repository(
        cli_service: ServiceProcess, llm: Any, tmp_path: Path, data_root: Path, receive_port: int) -> None:
    llm.script(*code_task_script())
    repo = make_git_repo(tmp_path / "shop")
    failures_before = push_failures(cli_service)

    result = run(cli_service, repo, data_root, receive_port, "--yes")

    assert result.returncode == 0, result.stdout + result.stderr
    branches = git(repo, "branch", "--list", "task/*").split()
    assert len(branches) == 1
    branch = branches[0]
    assert git(repo, "show", "--name-only", "--format=", branch).split() == ["app/health.py"]
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"  # fetched, never checked out
    assert git(repo, "status", "--porcelain") == "" and not (repo / "app").exists()
    assert f"branch {branch} created in {repo}" in result.stdout and "✔ done" in result.stdout
    assert "→ answered automatically (--yes): yes" in result.stdout and "Approval needed: commit" in result.stdout
    assert "100%|" in result.stderr and "execute_step · goal 1/1 · step 1/1" in result.stderr
    assert "wrote app/health.py" in result.stdout  # the agent's own output, live
    assert push_failures(cli_service) == failures_before  # the client's receiver took the service's pushes
    # where the time went, at the end: per node, and the model's share
    assert re.search(r"time by node: intake [\d.]+ s \(1 call, \d+ tokens, [\d.]+ s\); evidence_pack", result.stdout)
    assert re.search(r"model: 2 calls, \d+ tokens, \d+ s of run time", result.stdout)

    thread_id = thread_of(result)
    status = jervis("status", thread_id, "--url", cli_service.url)
    assert status.returncode == 0 and "status: done" in status.stdout and f"branch: {branch}" in status.stdout
    listed = jervis("list", "--json", "--url", cli_service.url)
    assert listed.returncode == 0, listed.stderr
    mine = next(item for item in json.loads(listed.stdout)["runs"] if item["thread_id"] == thread_id)
    assert list(mine) == RUN_KEYS
    assert (mine["status"], mine["percent"], mine["branch"], mine["client_id"], mine["error"]) == (
        "done", 100.0, branch, "cli", None)
    assert datetime.fromisoformat(mine["updated_at"]) >= datetime.fromisoformat(mine["created_at"])
    table = jervis("list", "--url", cli_service.url, "--limit", "5")
    assert table.returncode == 0 and thread_id in table.stdout


def test_rejecting_the_commit_on_stdin_exits_5_and_brings_nothing_back(
        cli_service: ServiceProcess, llm: Any, tmp_path: Path, data_root: Path, receive_port: int) -> None:
    llm.script(*code_task_script())
    repo = make_git_repo(tmp_path / "shop")

    result = run(cli_service, repo, data_root, receive_port, stdin="ne\n")

    assert result.returncode == 5, result.stdout + result.stderr
    assert "? Approval needed: commit" in result.stdout
    assert "app/health.py" in result.stdout and "1 file changed" in result.stdout  # diff --stat of the clone
    assert "you refused the commit gate" in result.stdout and "no branch was created" in result.stdout
    assert git(repo, "branch", "--list", "task/*").strip() == ""


def test_failing_run_exits_1_and_prints_the_error(
        cli_service: ServiceProcess, llm: Any, tmp_path: Path, data_root: Path, receive_port: int) -> None:
    llm.script(
        Reply(match=node_marker("intake"), content=classification("single_task", "code", "simple"), name="intake"),
        Reply(match=node_marker("plan"), content=goals_json("Health endpoint"), name="plan"),
        Reply(match=node_marker("plan_steps"), content=steps_json("@@FAIL the build server is unreachable"),
              name="plan_steps"),
    )  # no reflection verdict: the service's own policy decides (retry → ask → stop at the cap)
    repo = make_git_repo(tmp_path / "shop")

    result = run(cli_service, repo, data_root, receive_port, "--yes")

    assert result.returncode == 1, result.stdout + result.stderr
    assert "✘ error" in result.stdout and "the build server is unreachable" in result.stdout
    assert "? The run asks:" in result.stdout and "(--yes): Pokračuj podle svého uvážení" in result.stdout
    assert "↻ reflection: stop" in result.stdout and "Zbývá:" in result.stdout  # the report from /status
    status = jervis("status", thread_of(result), "--url", cli_service.url)
    assert status.returncode == 1 and "status: error" in status.stdout


def test_service_down_exits_3_with_a_clear_message(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "shop")

    result = jervis("run", "--repo", repo, "--url", f"http://127.0.0.1:{free_port()}", "x")

    assert result.returncode == 3
    assert result.stderr.strip().splitlines()[-1].startswith("jervis: the service at http://127.0.0.1:")
    assert "is not reachable" in result.stderr and result.stdout == ""
