"""A workspace that is not there is refused, never created empty (issue 40, item 6).

A client with a wrong DATA_ROOT (the terminal client pointed at another service), a wrong mount or
path would otherwise get an empty directory made where it pointed and an agent writing a project
from nothing in it. Played against the real service: the dispatch gets a 422 naming the path and
DATA_ROOT with nothing created, stored or locked; a run whose workspace is gone by the time a step
needs it ends in error saying so, and nothing is created in its place.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from app.cli.codes import ExitCode
from tests.fixtures.service import ROOT, ServiceProcess
from tests.security import reads_support
from tests.support import (
    advice_script,
    approval,
    code_task_script,
    make_git_repo,
    new_task_id,
    orchestrate_body,
    wait_until,
)

reads_service = reads_support.reads_service
api = reads_support.api


def _tree(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in (root / "clients").rglob("*")} \
        if (root / "clients").exists() else set()


def test_a_missing_project_workspace_is_refused_naming_it_and_nothing_is_created_stored_or_locked(
        api: httpx.Client, llm: Any, kotlin: Any, data_root: Path) -> None:
    llm.script(*code_task_script())
    rel = f"clients/c1/{new_task_id()}"
    body = orchestrate_body(workspace_path=rel, project_id="p1", project_name="webshop")
    before = _tree(data_root)

    refused = api.post("/orchestrate/stream", json=body)

    assert refused.status_code == 422, refused.text
    detail = refused.json()["detail"]
    assert rel in detail and str(data_root.resolve()) in detail and "DATA_ROOT" in detail
    assert not (data_root / rel).exists() and _tree(data_root) == before
    runs = api.get("/runs", params={"limit": 200}).json()["runs"]
    assert body["task_id"] not in {run["task_id"] for run in runs}
    assert [s for s in kotlin.statuses if s["taskId"] == body["task_id"]] == []
    assert llm.requests == []
    # No slot held: the one orchestration slot takes the next (valid) run at once.
    llm.script(*advice_script())
    started = api.post("/orchestrate/stream", json=orchestrate_body(query="Co umíš?"))
    assert started.status_code == 200, started.text
    kotlin.wait_for_status(thread_id=started.json()["thread_id"], status="done")


def test_a_workspace_that_is_a_file_is_refused_and_left_alone(api: httpx.Client, data_root: Path) -> None:
    rel = f"clients/c1/{new_task_id()}"
    (data_root / rel).parent.mkdir(parents=True, exist_ok=True)
    (data_root / rel).write_text("not a project")

    refused = api.post("/orchestrate/stream", json=orchestrate_body(workspace_path=rel, project_id="p1"))

    assert refused.status_code == 422 and "is not a directory" in refused.json()["detail"]
    assert (data_root / rel).read_text() == "not a project"


def test_a_new_project_asked_for_gets_its_empty_workspace(api: httpx.Client, llm: Any, kotlin: Any,
                                                          data_root: Path) -> None:
    llm.script(*advice_script())
    rel = f"clients/c1/{new_task_id()}"

    started = api.post("/orchestrate/stream", json=orchestrate_body(workspace_path=rel, project_id="p1",
                                                                    new_project=True, query="Co umíš?"))

    assert started.status_code == 200, started.text
    assert (data_root / rel).is_dir()
    kotlin.wait_for_status(thread_id=started.json()["thread_id"], status="done")


def test_a_run_without_a_project_is_accepted_but_no_agent_runs_on_a_workspace_that_is_not_there(
        api: httpx.Client, llm: Any, kotlin: Any, data_root: Path) -> None:
    """Kotlin's chat without a project (`clients/<id>/default`, which need not exist) is taken: a
    question needs no workspace. A code step does: the run ends naming the path, nothing made."""
    llm.script(*code_task_script())
    rel = f"clients/{new_task_id()}/default"

    started = api.post("/orchestrate/stream", json=orchestrate_body(workspace_path=rel))

    assert started.status_code == 200, started.text
    ended = kotlin.wait_for_status(thread_id=started.json()["thread_id"], status="error", timeout=60)
    assert rel in ended["error"] and str(data_root.resolve()) in ended["error"]
    assert not (data_root / rel).exists() and not (data_root / rel).parent.exists()


def test_a_waiting_run_whose_workspace_is_gone_ends_in_error_naming_it_and_nothing_is_created(
        api: httpx.Client, llm: Any, kotlin: Any, data_root: Path) -> None:
    rel = f"clients/c1/{new_task_id()}"
    repo = make_git_repo(data_root / rel)
    llm.script(*code_task_script())
    thread_id = api.post("/orchestrate/stream",
                         json=orchestrate_body(workspace_path=rel, project_id="p1")).json()["thread_id"]
    kotlin.wait_for_status(thread_id=thread_id, status="interrupted", timeout=60)  # the commit gate
    shutil.rmtree(repo)  # a volume remounted, the project moved: gone while the run waited

    assert api.post(f"/approve/{thread_id}", json=approval(True, "ano")).status_code == 200
    ended = kotlin.wait_for_status(thread_id=thread_id, status="error", timeout=60)

    assert rel in ended["error"] and str(data_root.resolve()) in ended["error"]
    assert not (data_root / rel).exists()
    status = wait_until(lambda: (s := api.get(f"/status/{thread_id}").json())["status"] == "error" and s,
                        what="the error status")
    assert rel in status["error"]


def test_the_terminal_client_with_another_data_root_is_refused_and_told_why(
        reads_service: ServiceProcess, llm: Any, tmp_path: Path, data_root: Path) -> None:
    """The issue's own case: `jervis run` placed its clone under its --data-root, which is not the
    service's; the service used to create the path empty under its own DATA_ROOT and run Aider
    there ("Git repo: none"). Now it refuses, and the client says which data roots differ."""
    llm.script(*code_task_script())
    repo = make_git_repo(tmp_path / "slugify")
    elsewhere = tmp_path / "client-data"
    before = _tree(data_root)

    done = subprocess.run([sys.executable, "-m", "app.cli", "run", "--repo", str(repo), "--url", reads_service.url,
                           "--data-root", str(elsewhere), "--receive", "off", "Add a slugify function"],
                          cwd=ROOT, text=True, capture_output=True, timeout=180)

    assert done.returncode == ExitCode.REJECTED_REQUEST, done.stdout + done.stderr
    assert "does not exist under DATA_ROOT" in done.stderr and str(data_root.resolve()) in done.stderr
    assert f"this client placed the workspace at {elsewhere.resolve()}/cli/slugify-" in done.stderr
    assert "is --data-root (or DATA_ROOT) the service's DATA_ROOT?" in done.stderr
    assert not list(data_root.glob("cli/slugify-*")) and _tree(data_root) == before and llm.requests == []
