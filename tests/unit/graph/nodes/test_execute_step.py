"""execute_step's code steps (app/graph/nodes/execute_step.py) on a workspace whose symlinks lead
out of it: the step fails with a clear reason and no agent starts; which files the agent edits and reads."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest
from langgraph.runtime import Runtime

from app.agents.base import AgentJob, AgentResult, LogSink, Prepare, StopFailure
from app.graph.context import RunContext
from app.graph.nodes.execute_step import execute_step, step_files
from app.llm.scope import scope_for, use_scope
from app.schemas.domain import CodingStep
from tests.support import file_block, kotlin_rules, make_git_repo
from tests.unit.graph.graph_support import start


async def test_a_code_step_on_a_workspace_with_a_symlink_out_fails_without_starting_the_agent(
        ctx: RunContext, tmp_path_factory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    workspace = make_git_repo(ctx.workspaces.root / "clients" / "c1" / "default")
    (workspace / "docs").symlink_to(outside)
    state, _ = start("Přidej endpoint /health")
    step = CodingStep(instructions=file_block("docs/health.md", "# Health"), files=["docs/health.md"],
                      agent_type="aider")
    state |= {"goals": [{"id": "1", "title": "Health endpoint"}], "steps": [step.model_dump(mode="json")],
              "current_goal_index": 0, "current_step_index": 0, "attempt": 1}

    update = await execute_step(state, Runtime(context=ctx))

    [result] = update["step_results"]
    assert result["success"] is False
    assert result["summary"].startswith("Agent aider not started: the workspace has 1 symlink(s) leading outside it")
    assert f"docs -> {outside}" in result["summary"]
    assert list(outside.iterdir()) == [] and not (workspace / ".jervis").exists()  # nothing written, no agent ran


class StoppedAgentRunner:
    """A runner that stopped its agent (a timeout) but could not delete the agent's Job."""

    def program(self, agent_type: str) -> str:
        return agent_type

    async def run(self, job: AgentJob, *, prepare: Prepare, on_log: LogSink | None = None) -> AgentResult:
        return AgentResult(success=False, summary="Agent aider timed out after 60 s",
                           not_stopped=StopFailure(job="jervis-t1-g0-s0-a1-x", error="deleting Job failed: 403"))


async def test_an_agent_that_could_not_be_stopped_is_said_in_the_steps_result_and_the_report(ctx: RunContext) -> None:
    make_git_repo(ctx.workspaces.root / "clients" / "c1" / "default")
    state, _ = start("Přidej endpoint /health")
    step = CodingStep(instructions=file_block("app.py", "x = 1"), files=["app.py"], agent_type="aider")
    state |= {"goals": [{"id": "1", "title": "Health endpoint"}], "steps": [step.model_dump(mode="json")],
              "current_goal_index": 0, "current_step_index": 0, "attempt": 1}

    update = await execute_step(state, Runtime(context=dataclasses.replace(ctx, runner=StoppedAgentRunner())))

    said = ("Job agenta jervis-t1-g0-s0-a1-x se nepodařilo smazat (deleting Job failed: 403): agent může běžet dál "
            "až do svého časového limitu.")  # the run's language (Czech here)
    [result] = update["step_results"]
    assert result["success"] is False and result["summary"] == f"Agent aider timed out after 60 s. {said}"
    assert update["warnings"] == [said]


def test_the_agent_edits_the_files_the_words_name_and_reads_the_rest(tmp_path: Path) -> None:
    """Seen on python-slugify: the planner listed three files for a change of __main__.py; all three went
    into Aider's chat and were rewritten whole."""
    for path in ("slugify/__init__.py", "slugify/__main__.py", "slugify/__version__.py", "test.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("import slugify\n" if path == "test.py" else "x = 1\n")
    step = CodingStep(instructions="Add a --version option", files=[
        "slugify/__init__.py", "slugify/__main__.py", "slugify/__version__.py"])
    files = step_files(tmp_path, step, "Add a --version option to slugify/__main__.py")
    assert files.editable == ["slugify/__main__.py"]
    assert files.context == ["slugify/__init__.py", "slugify/__version__.py"]

    # a file still to be created is the agent's to write; nothing named: every file is editable
    creating = step.model_copy(update={"files": ["slugify/__main__.py", "slugify/cli.py"]})
    assert step_files(tmp_path, creating, "Add a --version option to slugify/__main__.py").editable == [
        "slugify/__main__.py", "slugify/cli.py"]
    unnamed = step_files(tmp_path, step, "Add a --version option")
    assert (unnamed.editable, unnamed.context) == (step.files, [])


class RecordingRunner:
    """Records the job it is asked to run and reports a success."""

    def __init__(self) -> None:
        self.jobs: list[AgentJob] = []

    def program(self, agent_type: str) -> str:
        return agent_type

    async def run(self, job: AgentJob, *, prepare: Prepare, on_log: LogSink | None = None) -> AgentResult:
        self.jobs.append(job)
        return AgentResult(success=True, summary="done", changed_files=["app.py"])


@pytest.mark.parametrize(("rules", "approved", "cloud"), [
    ({}, False, []),
    ({"auto_use_anthropic": True}, False, ["anthropic"]),
    ({"auto_use_openai": True}, False, ["openai"]),
    ({}, True, ["anthropic", "gemini", "openai"]),
])
async def test_the_agent_job_carries_the_cloud_providers_the_run_allows(
        ctx: RunContext, rules: dict[str, bool], approved: bool, cloud: list[str]) -> None:
    """What decides whether Claude Code gets Anthropic's key (app/agents/agent_env.py): the project's
    rules and an approved escalation, as the run's LLM scope has them."""
    make_git_repo(ctx.workspaces.root / "clients" / "c1" / "default")
    state, _ = start("Přidej endpoint /health", rules=kotlin_rules(**rules))
    step = CodingStep(instructions=file_block("app.py", "x = 1"), files=["app.py"], agent_type="claude")
    state |= {"goals": [{"id": "1", "title": "Health endpoint"}], "steps": [step.model_dump(mode="json")],
              "current_goal_index": 0, "current_step_index": 0, "attempt": 1}
    runner = RecordingRunner()

    with use_scope(scope_for(state["rules"], state["task"]["query"], cloud_approved=approved)):
        await execute_step(state, Runtime(context=dataclasses.replace(ctx, runner=runner)))

    [job] = runner.jobs
    assert job.cloud_providers == cloud


def chattr(flag: str, path: Path) -> None:
    subprocess.run(["chattr", flag, str(path)], check=True)


class LockingAgentRunner:
    """Prepares the step, then leaves in `.jervis/` a file the service cannot delete (an agent that
    made it read-only, for a service that is not root; immutable here, where the tests are root)."""

    def program(self, agent_type: str) -> str:
        return agent_type

    async def run(self, job: AgentJob, *, prepare: Prepare, on_log: LogSink | None = None) -> AgentResult:
        await prepare()
        planted = job.workspace / ".jervis" / "planted.json"
        planted.write_text("{}")
        chattr("+i", planted)
        (job.workspace / "app.py").write_text("x = 1\n")
        return AgentResult(success=True, summary="Done.", changed_files=["app.py"])


async def test_a_step_whose_workspace_cannot_be_cleaned_fails_saying_what_was_left(ctx: RunContext) -> None:
    workspace = make_git_repo(ctx.workspaces.root / "clients" / "c1" / "default")
    state, _ = start("Přidej endpoint /health")
    step = CodingStep(instructions=file_block("app.py", "x = 1"), files=["app.py"], agent_type="aider")
    state |= {"goals": [{"id": "1", "title": "Health endpoint"}], "steps": [step.model_dump(mode="json")],
              "current_goal_index": 0, "current_step_index": 0, "attempt": 1}
    try:
        update = await execute_step(state, Runtime(context=dataclasses.replace(ctx, runner=LockingAgentRunner())))
    finally:
        chattr("-i", workspace / ".jervis" / "planted.json")

    [result] = update["step_results"]
    assert result["success"] is False
    assert result["summary"].startswith("Done. The workspace could not be cleaned after the step: "
                                        ".jervis/planted.json (Operation not permitted)")
