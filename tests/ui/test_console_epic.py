"""An epic in the console: the plan gate answered from the page, goals of one wave running side by
side in the plan, the commit gate with a diff per goal, and one commit per goal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.fixtures.llm_server import Reply
from tests.fixtures.service import ServiceProcess
from tests.support import classification, file_block, git, node_marker, steps_json
from tests.ui.conftest import screenshot
from tests.ui.test_console import start_run

GOALS = [{"id": "a", "title": "Add alpha", "dependencies": []},
         {"id": "b", "title": "Add beta", "dependencies": ["a"]},
         {"id": "c", "title": "Add gamma", "dependencies": []}]
FILES = {"Add alpha": "alpha.py", "Add beta": "beta.py", "Add gamma": "gamma.py"}


def epic_script(release: Path) -> list[Reply]:
    """Each goal one code step writing its file; the first wave's agents wait for `release`."""
    def steps(request: Any) -> str:
        title = request.last_user.split("## Goal\n", 1)[1].split("\n", 1)[0]
        hold = f"@@WAIT {release}\n" if title != "Add beta" else ""
        return steps_json(f"Write {FILES[title]}\n{hold}{file_block(FILES[title], f'# {title}')}")

    return [Reply(match=node_marker("intake"), content=classification("epic", "code", "complex")),
            Reply(match=node_marker("plan_epic"), content=json.dumps({"goals": GOALS})),
            Reply(match=node_marker("plan_steps"), content=steps),
            Reply(match=node_marker("review_epic"),
                  content=json.dumps({"approved": True, "issues": [], "summary": "All three goals are done."}))]


def test_an_epics_waves_goals_and_per_goal_diffs_on_the_run_page(
        page: Page, console_service: ServiceProcess, llm: Any, kotlin: Any, data_root: Path, tmp_path: Path,
        gates: Path) -> None:
    release = gates / f"{tmp_path.name}-release"
    llm.script(*epic_script(release))
    thread_id, repo, task_id = start_run(console_service, data_root, query="Build alpha, beta and gamma")
    page.goto(f"/ui/runs/{thread_id}")

    expect(page.locator("#question h2")).to_have_text("The run waits for you: epic_plan", timeout=30_000)
    plan = page.locator("#plan")
    for goal, wave in (("a", "wave 1"), ("b", "wave 2"), ("c", "wave 1")):
        expect(plan.locator(f'[data-goal="{goal}"]')).to_contain_text(wave)
    expect(plan.locator('[data-goal="b"]')).to_contain_text("after a")
    page.locator("#answer-yes").click()

    # the first wave's goals run side by side, each in its own worktree: both are running at once
    for goal in ("a", "c"):
        expect(plan.locator(f'[data-goal="{goal}"] > div [data-status=running]')).to_be_visible(timeout=30_000)
    expect(plan.locator('[data-goal="b"] > div [data-status=waiting]')).to_be_visible()
    for goal, title in (("a", "Write alpha.py"), ("c", "Write gamma.py")):  # read from each goal's own checkpoint
        expect(plan.locator(f'[data-goal="{goal}"] .step [data-status=running]')).to_be_visible(timeout=30_000)
        expect(plan.locator(f'[data-goal="{goal}"] .step')).to_contain_text(title)
    expect(page.locator("#timeline")).to_contain_text("Add alpha: ")  # a goal's node, named after it
    expect(page.locator("#timeline")).to_contain_text("Add gamma: ")
    release.touch()

    expect(page.locator("#question h2")).to_have_text("The run waits for you: commit", timeout=60_000)
    expect(page.locator("#answer-result")).to_be_empty()  # the plan's answer was another question
    expect(plan.locator(".goal > div [data-status=done]")).to_have_count(3)
    options = page.locator("#diff-part option")
    expect(options).to_contain_text(["Whole run", "Goal 1: Add alpha", "Goal 2: Add gamma", "Goal 3: Add beta"])
    page.locator("#diff-part").select_option(label="Goal 2: Add gamma")
    expect(page.locator("#diff-text")).to_contain_text("+++ b/gamma.py")
    expect(page.locator("#diff-text")).not_to_contain_text("alpha.py")
    screenshot(page, "console-epic.png", tmp_path)

    page.locator("#answer-yes").click()
    expect(page.locator(".run-header [data-status=done]")).to_be_visible(timeout=30_000)
    kotlin.wait_for_status(thread_id=thread_id, status="done")
    log = git(repo, "log", "--format=%s", "-n", "3", f"task/{task_id}").splitlines()
    assert [line.split(" ", 1)[1] for line in log] == ["Add beta", "Add gamma", "Add alpha"]
