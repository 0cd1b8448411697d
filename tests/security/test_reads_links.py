"""Reads after a step never follow the agent's links (issue 40, item 7).

The agent works in the workspace; the service reads some of its files afterwards, outside the
sandbox: the changed files the evaluation judges, the sources the import check scans, the design
document the revision sends back to the LLM. Played as a hostile agent would: a symlink planted in
place of such a file, pointing at a secret outside the workspace (another client's credentials,
which the sandbox hides). The secret never reaches the LLM (the scripted server records every
prompt), the evaluation, the events, the pushes or the service's log; the evaluation says the file
is a link and was not read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.fixtures.llm_server import Reply
from tests.fixtures.service import ServiceProcess
from tests.security import reads_support
from tests.support import (
    approval,
    classification,
    code_task_script,
    file_block,
    git,
    make_git_repo,
    new_task_id,
    node_marker,
    orchestrate_body,
    sse_events,
)

reads_service = reads_support.reads_service
api = reads_support.api

SECRET = "SECRET_sk_live_7f3c9a1e"


def secret_file(tmp_path: Path, name: str, text: str) -> Path:
    """Another client's file outside the workspace (and outside what the sandbox shows)."""
    folder = tmp_path / "other-client"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def project(data_root: Path) -> tuple[str, Path]:
    rel = f"clients/c1/{new_task_id()}"
    repo = make_git_repo(data_root / rel)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "add", "calc.py")
    git(repo, "commit", "-q", "-m", "calc")
    return rel, repo


def assert_nowhere(secret: str, *, api: httpx.Client, thread_id: str, llm: Any, kotlin: Any, events: Any,
                   service: ServiceProcess) -> None:
    prompts = [request.text for request in llm.requests]
    assert prompts and not [p for p in prompts if secret in p], "the secret reached the LLM"
    assert secret not in json.dumps(events, ensure_ascii=False), "the secret reached the events"
    assert secret not in json.dumps(kotlin.statuses + kotlin.progress, ensure_ascii=False), "… the pushes"
    for view in (f"/runs/{thread_id}", f"/runs/{thread_id}/diff", f"/status/{thread_id}"):
        shown = api.get(view)
        assert shown.status_code == 200 and secret not in shown.text, f"the secret reached {view}"
    assert secret not in service.log_path.read_text(errors="replace"), "the secret reached the log"


def test_a_changed_file_and_an_importer_linked_to_a_secret_are_not_read(
        api: httpx.Client, reads_service: ServiceProcess, llm: Any, kotlin: Any, data_root: Path,
        tmp_path: Path) -> None:
    """The step rewrites calc.py and plants `check_calc.py` -> a secret Python file that imports a
    secret name from calc. Followed, the import check would quote that name ("check_calc.py imports
    SECRET_… from calc.py") into the feedback, the events and the next prompt."""
    rel, _ = project(data_root)
    secret = secret_file(tmp_path, "settings.py", f"from calc import add, {SECRET}\n")
    instructions = "\n".join([file_block("calc.py", "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n"
                                                    "    return a - b"),
                              f"@@LINK check_calc.py {secret}"])
    script = code_task_script(files={"calc.py": ""})
    script[2] = Reply(match=node_marker("plan_steps"), content=json.dumps({"steps": [
        {"instructions": instructions, "step_type": "code", "files": ["calc.py"]}]}), name="plan_steps")
    llm.script(*script)

    thread_id = api.post("/orchestrate/stream", json=orchestrate_body(
        workspace_path=rel, project_id="p1", query="Add a subtraction function to the calculator")).json()["thread_id"]
    kotlin.wait_until(lambda: next((s for s in kotlin.statuses if s["threadId"] == thread_id), None), 90,
                      lambda: f"a status of {thread_id}: {kotlin.describe()}")
    events = sse_events(api, thread_id)

    checks = [check for _, kind, data in events if kind == "verification" for check in data["checks"]]
    integrity = [check for check in checks if check["name"] == "integrity"]
    assert integrity and integrity[0]["status"] == "failed", checks
    assert "check_calc.py is a symbolic link" in integrity[0]["message"] and "not read" in integrity[0]["message"]
    assert_nowhere(SECRET, api=api, thread_id=thread_id, llm=llm, kotlin=kotlin, events=events,
                   service=reads_service)
    api.post(f"/cancel/{thread_id}")


def test_a_design_document_swapped_for_a_link_is_not_sent_to_the_llm(
        api: httpx.Client, reads_service: ServiceProcess, llm: Any, kotlin: Any, data_root: Path,
        tmp_path: Path) -> None:
    """The document waits at the `generative_design` gate; replaced by a link to a secret before the
    user refuses it with a reason, the revision would send the secret to the model as the earlier
    design."""
    rel, repo = project(data_root)
    secret = secret_file(tmp_path, "credentials.md", f"# prod\ntoken = {SECRET}\n")
    goals = [{"id": "store", "title": "Add the store", "dependencies": []}]

    def design(summary: str) -> str:
        return json.dumps({"summary": summary, "context": "A notes service.", "decisions": [],
                           "interfaces": [], "goals": goals})

    llm.script(Reply(match=node_marker("intake"), content=classification("generative", "code", "complex")),
               Reply(match=node_marker("design"), content=design("Notes in JSON."), times=1, name="design-1"),
               Reply(match=node_marker("design"), content=design("Notes in SQLite."), name="design-2"))
    thread_id = api.post("/orchestrate/stream", json=orchestrate_body(
        workspace_path=rel, project_id="p1", query="Build a small notes service")).json()["thread_id"]
    gate = kotlin.wait_for_status(thread_id=thread_id, status="interrupted", timeout=60)
    assert gate["interruptAction"] == "generative_design"
    document = repo / "docs/design/build-a-small-notes-service.md"
    document.unlink()
    document.symlink_to(secret)

    assert api.post(f"/approve/{thread_id}", json=approval(False, "use SQLite instead")).status_code == 200
    kotlin.wait_until(lambda: len([s for s in kotlin.statuses if s["threadId"] == thread_id]) >= 2, 60,
                      lambda: f"the second gate of {thread_id}: {kotlin.describe()}")
    events = sse_events(api, thread_id)

    revision = next(r for r in llm.requests if r.matched == "design-2").last_user
    assert "is a symbolic link or not a regular file now; it was not read" in revision
    assert_nowhere(SECRET, api=api, thread_id=thread_id, llm=llm, kotlin=kotlin, events=events,
                   service=reads_service)
    assert not document.is_symlink() and "Notes in SQLite." in document.read_text()  # written anew, in place
    assert secret.read_text() == f"# prod\ntoken = {SECRET}\n"
    api.post(f"/cancel/{thread_id}")
