"""find_tests: under `require_tests`, which command runs the project's tests — decided before
any planning, so the plan gate and the progress say it, and asked for when nothing names one.

The request's `environment.testCommand` wins, then the user's answer remembered for the project,
then detection on the workspace (`app/agents/test_command.py`). When none gives a command the
user is asked (interrupt `clarify`, in the run's language); the answer is this run's command and
is remembered for the project's next runs. An answer that names no command ("no tests", a
refusal) ends the run before any change, saying why: work is never committed untested under
the rule. The node re-runs from its start on resume; what comes before `interrupt()` only reads.
"""

from __future__ import annotations

from typing import Any

from langgraph.types import interrupt

from app.agents.test_command import TestCommand, command_from_environment, detect_test_command
from app.graph.rules.approval import answer_text
from app.graph.rules.test_plan import command_from_answer, from_plan, to_plan
from app.graph.run_state import NodeRuntime, current_thread_id, emit, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Inputs
from app.graph.state_parts import PlannedTestsDict
from app.persistence.project_memory import project_key
from app.texts import Texts, texts


async def find_tests(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    task = task_of(state)
    t = texts(run_language(state, ctx.settings))
    key = project_key(task["client_id"], task.get("project_id"), task["workspace_path"])
    plan = await _known(state, runtime, key, t)
    if plan is None:
        question = t.tests_which_command
        decision = interrupt({"type": "clarification", "action": "clarify", "kind": "test_command",
                              "description": question, "task_id": task["id"], "questions": [question]})
        refused = isinstance(decision, dict) and decision.get("approved") is False
        command = None if refused else command_from_answer(answer_text(decision))
        if command is None:
            return {"error": t.tests_none_stop}
        await ctx.project_memory.remember_test_command(key, command, thread_id=current_thread_id())
        plan = to_plan(TestCommand(shell=command, source=t.tests_source_user), "user")
    found = from_plan(plan)
    emit({"type": "tests_found", "command": found.label() if found else "", "source": plan["source"],
          "origin": plan["origin"]})
    return {"test_plan": plan}


async def _known(state: OrchestratorState, runtime: NodeRuntime, key: str, t: Texts) -> PlannedTestsDict | None:
    """The command that needs no question: the request's, the project's remembered one, a detected one."""
    if given := command_from_environment(Inputs.of(state).environment):
        return to_plan(given.model_copy(update={"source": t.tests_source_environment}), "environment")
    ctx = runtime.context
    if remembered := await ctx.project_memory.test_command(key):
        return to_plan(TestCommand(shell=remembered, source=t.tests_source_remembered), "remembered")
    workspace = ctx.workspaces.resolve(task_of(state)["workspace_path"])
    detected = detect_test_command(workspace)
    return to_plan(detected, "detected") if detected else None
