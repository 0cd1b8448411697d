"""The operator console (`/ui`) in headless Chromium against the real service: the list shows a
new run, the run page shows nodes as they arrive, the commit gate is answered from the page,
cancel from the page ends a run, and an answer that lost to another channel says who won."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.fixtures.service import ServiceProcess
from tests.support import approval, code_task_script, git, make_git_repo, new_task_id, orchestrate_body, wait_until
from tests.ui.conftest import screenshot

REQUEST = "Add a /health endpoint that answers {\"status\": \"ok\"}\nThe monitoring checks it every minute."


def start_run(service: ServiceProcess, data_root: Path, *, agent: str = "", query: str = REQUEST) -> tuple[str, Path,
                                                                                                              str]:
    """A code task in a fresh git workspace, started the way Kotlin starts one."""
    rel = f"clients/c1/{new_task_id()}"
    repo = make_git_repo(data_root / rel)
    body = orchestrate_body(workspace_path=rel, query=query)
    with service.client() as http:
        response = http.post("/orchestrate/stream", json=body)
    assert response.status_code == 200, response.text
    return response.json()["thread_id"], repo, body["task_id"]


def at_commit_gate(service: ServiceProcess, llm: Any, kotlin: Any, data_root: Path) -> tuple[str, Path, str]:
    """A code task that has done its work and waits at the commit gate."""
    llm.script(*code_task_script())
    thread_id, repo, task_id = start_run(service, data_root)
    kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
    return thread_id, repo, task_id


def run_status(service: ServiceProcess, thread_id: str) -> str:
    with service.client() as http:
        return str(http.get(f"/status/{thread_id}").json()["status"])


def test_the_list_shows_a_new_run_and_its_page_answers_the_commit_gate(
        page: Page, console_service: ServiceProcess, llm: Any, kotlin: Any, data_root: Path, tmp_path: Path,
        gates: Path) -> None:
    release = gates / f"{tmp_path.name}-release"
    llm.script(*code_task_script(extra_instructions=f"Write the health endpoint in app/health.py\n@@WAIT {release}"))
    page.goto("/ui")
    expect(page.locator("h1")).to_have_text("Runs")

    thread_id, repo, task_id = start_run(console_service, data_root)
    row = page.locator(f'tr[data-thread="{thread_id}"]')
    expect(row).to_be_visible()  # the list polls: the run appears without a reload
    expect(row.locator(".request a")).to_have_text("Add a /health endpoint that answers {\"status\": \"ok\"}")
    expect(row.locator("[data-status=running]")).to_be_visible()
    row.locator(".request a").click()

    expect(page).to_have_url(f"{console_service.url}/ui/runs/{thread_id}")
    timeline = page.locator("#timeline")
    expect(timeline.locator('li[data-node="execute_step"]')).to_be_visible()
    expect(timeline.locator("li[data-kind=agent_log] pre")).to_contain_text("waiting for")
    expect(page.locator("#plan .step [data-status=running]")).to_have_count(1)
    expect(timeline.locator('li[data-node="git_operations"]')).to_have_count(0)
    release.touch()  # the agent goes on: what follows reaches the open page through its stream

    question = page.locator("#question")
    expect(question).to_be_visible(timeout=30_000)
    expect(question.locator("h2")).to_have_text("The run waits for you: commit")
    expect(page.locator("#question-text")).to_contain_text(f"task/{task_id}")
    expect(timeline.locator('li[data-node="evaluate"]')).to_be_visible()
    expect(timeline.locator('li[data-node="git_operations"]')).to_be_visible()
    expect(timeline.locator("li[data-kind=agent_log] pre")).to_contain_text("wrote app/health.py")
    expect(page).to_have_title(f"(1 waiting) ⏳ Waiting for you: {REQUEST.splitlines()[0]}")
    expect(page.locator("#waiting-badge")).to_have_text("1 waiting for you")
    expect(page.locator("#plan .goal > div [data-status=done]")).to_have_count(1)
    expect(page.locator("#plan .goal strong")).to_have_text(REQUEST.splitlines()[0])
    expect(page.locator("#plan .step")).to_contain_text("Write the health endpoint in app/health.py")
    expect(page.locator("#plan .step [data-status=done]")).to_have_count(1)
    expect(page.locator("#diff-part")).to_contain_text("Whole run")
    expect(page.locator("#diff-text")).to_contain_text("+++ b/app/health.py")
    expect(page.locator("#budget")).to_contain_text("Tokens")
    assert git(repo, "branch", "--list", f"task/{task_id}") == ""  # nothing committed before the answer
    screenshot(page, "console-run.png", tmp_path)

    page.locator("a[data-nav]", has_text="all runs").click()
    waiting_row = page.locator(f'tr[data-thread="{thread_id}"]')
    expect(waiting_row).to_have_class("run waiting")
    expect(waiting_row.locator("[data-status=interrupted]")).to_have_text("waits: commit")
    screenshot(page, "console-runs.png", tmp_path)
    waiting_row.locator(".request a").click()

    page.locator("#answer-yes").click()
    expect(page.locator("#answer-result")).to_have_text("Answered: the run goes on.")
    expect(page.locator(".run-header [data-status=done]")).to_be_visible(timeout=30_000)
    expect(page.locator("#timeline li[data-kind=done]")).to_be_visible()
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")
    assert done["branch"] == f"task/{task_id}"
    assert git(repo, "show", "--name-only", "--format=", f"task/{task_id}").split() == ["app/health.py"]
    answer = wait_until(lambda: _record_answer(console_service, thread_id), what="the answer on record")
    assert answer["approved"] is True and answer["interrupt_action"] == "commit"
    expect(page.locator("#report")).to_contain_text("app/health.py")
    expect(page).to_have_title(f"{REQUEST.splitlines()[0]} · Jervis")
    expect(page.locator("#question")).to_be_hidden()  # nothing waits any more: no question, no badge
    expect(page.locator("#waiting-badge")).to_be_hidden()
    expect(page.locator("#timeline li[data-kind=agent_log] pre").last).to_contain_text("Committed 1 file(s)")


def test_cancel_from_the_page_ends_the_run(page: Page, console_service: ServiceProcess, llm: Any, kotlin: Any,
                                           data_root: Path) -> None:
    llm.script(*code_task_script(files={"late.txt": "never"}, extra_instructions="@@SLEEP 30"))
    thread_id, repo, _ = start_run(console_service, data_root, query="Write the late file")
    page.goto(f"/ui/runs/{thread_id}")
    expect(page.locator('#timeline li[data-node="execute_step"]')).to_be_visible()
    expect(page.locator("#plan .step [data-status=running]")).to_have_count(1)
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#cancel").click()

    expect(page.locator(".run-header [data-status=error]")).to_be_visible(timeout=15_000)
    expect(page.locator(".run-header .error-text")).to_contain_text("Orchestration cancelled by the user")
    expect(page.locator("#cancel")).to_have_count(0)
    error = kotlin.wait_for_status(thread_id=thread_id, status="error", timeout=10)
    assert error["error"].startswith("Orchestration cancelled by the user")
    assert not (repo / "late.txt").exists()


def test_a_dismissed_cancel_leaves_the_run_alone_and_a_declined_gate_commits_nothing(
        page: Page, console_service: ServiceProcess, llm: Any, kotlin: Any, data_root: Path) -> None:
    thread_id, repo, task_id = at_commit_gate(console_service, llm, kotlin, data_root)
    page.goto(f"/ui/runs/{thread_id}")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.locator("#cancel").click()
    expect(page.locator("#question")).to_be_visible()
    assert run_status(console_service, thread_id) == "interrupted"

    page.locator("#answer-text").fill("ne, ještě ne")  # typed words: approved only when they say yes
    page.locator("#answer-send").click()
    expect(page.locator(".run-header [data-status=done], .run-header [data-status=error]")).to_be_visible(
        timeout=30_000)
    answer = wait_until(lambda: _record_answer(console_service, thread_id), what="the answer on record")
    assert answer["approved"] is False
    assert git(repo, "branch", "--list", f"task/{task_id}") == ""


def test_an_answer_that_lost_to_another_channel_shows_who_answered(
        page: Page, console_service: ServiceProcess, llm: Any, kotlin: Any, data_root: Path) -> None:
    thread_id, _, _ = at_commit_gate(console_service, llm, kotlin, data_root)
    page.goto(f"/ui/runs/{thread_id}")
    expect(page.locator("#answer-yes")).to_be_visible()

    with console_service.client() as http:  # Kotlin answers first
        assert http.post(f"/approve/{thread_id}", json=approval(True, "ano")).status_code == 200
    page.locator("#answer-yes").click()

    result = page.locator("#answer-result")
    expect(result).to_contain_text("Already answered elsewhere: approved at ")
    expect(result).to_contain_text("on pod ")
    kotlin.wait_for_status(thread_id=thread_id, status="done")


def _record_answer(service: ServiceProcess, thread_id: str) -> dict[str, Any] | None:
    with service.client() as http:
        detail = http.get(f"/runs/{thread_id}").json()
    return detail.get("answer") if detail.get("status") in ("done", "error") else None


def test_the_page_reads_a_run_from_the_api_the_same_way_kotlin_sees_it(console_service: ServiceProcess,
                                                                       llm: Any, kotlin: Any, data_root: Path) -> None:
    """The run page's data (`/runs/{id}`, its diff) for a finished run, without a browser."""
    thread_id, _, _ = at_commit_gate(console_service, llm, kotlin, data_root)
    with console_service.client() as http:
        detail = http.get(f"/runs/{thread_id}").json()
        assert detail["question"]["action"] == "commit" and detail["question"]["clarification"] is False
        assert detail["waiting"] == "commit" and detail["request"] == REQUEST.splitlines()[0]
        assert detail["query"] == REQUEST
        [goal] = detail["goals"]
        assert goal["title"] == REQUEST.splitlines()[0] and goal["status"] == "done"
        assert [s["status"] for s in goal["steps"]] == ["done"]
        assert goal["steps"][0]["attempts"][0]["changed_files"] == ["app/health.py"]
        assert detail["budget"]["max_tokens"] == 500_000 and detail["budget"]["tokens"] > 0
        diff = http.get(f"/runs/{thread_id}/diff").json()
        labels = [part["label"] for part in diff["parts"]]
        assert labels[0] == "Whole run" and any(label.startswith("Goal 1, step 1") for label in labels)
        assert "+def health():" in diff["parts"][0]["diff"]
        listed = http.get("/runs", params={"status": "interrupted"}).json()["runs"]
        assert thread_id in [r["thread_id"] for r in listed] and {r["status"] for r in listed} == {"interrupted"}
        assert thread_id not in [r["thread_id"] for r in http.get("/runs", params={"status": "done"}).json()["runs"]]
        assert http.get("/runs/thread-nope-00000000").status_code == 404
        assert http.get("/runs", params={"status": "paused"}).status_code == 422
        http.post(f"/approve/{thread_id}", json=approval(False, "ne"))
    kotlin.wait_for_status(thread_id=thread_id, status="done")
