"""A single code task through the compiled graph (in-process, scripted LLM and agent): decided by
the rules, planned in at most one call, its agent told once what to do and which tests judge it,
and reported from the facts."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

from app.graph.context import RunContext
from app.graph.rules.failure_recovery import Caps, FailedStep, decide
from app.graph.verification import deadline_for_tests
from tests.fixtures.llm_server import Reply
from tests.support import file_block, kotlin_rules, make_git_repo, node_marker, reflection, steps_json
from tests.unit.graph.graph_support import matched, start

LEAP = "def leap_year(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n"
TESTS = ("import unittest\nfrom leap import leap_year\n\n\nclass LeapTest(unittest.TestCase):\n"
         "    def test_1900(self):\n        self.assertFalse(leap_year(1900))\n")
REQUEST = (f"Implement leap_year() in leap.py so that the tests in test_leap.py pass. Do not change test_leap.py.\n"
           f"{file_block('leap.py', LEAP)}")


@pytest.fixture
def exercise(tmp_path: Path) -> str:
    rel = "clients/c1/leap"
    repo = make_git_repo(tmp_path / rel)
    (repo / "leap.py").write_text("def leap_year(year):\n    raise NotImplementedError\n")
    (repo / "test_leap.py").write_text(TESTS)
    return rel


async def told(graph: Any, state: Any, config: Any, ctx: RunContext) -> str:
    """The run to its first stop; what the agent was told (the scripted agent echoes it)."""
    lines = []
    async for mode, chunk in graph.astream(state, config, context=ctx, stream_mode=["custom", "updates"]):
        if mode == "custom" and chunk.get("type") == "agent_log" and chunk["line"].startswith("instructions| "):
            lines.append(chunk["line"][len("instructions| "):])
    return "\n".join(lines)


@pytest.mark.settings(response_language="auto")
async def test_a_request_about_one_file_makes_no_model_call_and_is_reported_from_the_facts(
        graph: Any, ctx: RunContext, llm: Any, exercise: str, tmp_path: Path) -> None:
    state, config = start(REQUEST, workspace_path=exercise)

    instructions = await told(graph, state, config, ctx)

    assert matched(llm) == []  # intake by the rules, one step without a planner, no reflection needed
    snapshot = (await graph.aget_state(config)).values
    assert snapshot["task_category"] == "single_task" and snapshot["task_action"] == "code"
    assert [s["instructions"] for s in snapshot["steps"]] == [REQUEST] and snapshot["steps"][0]["files"] == ["leap.py"]
    assert instructions.count("Implement leap_year()") == 1  # the request once: it is the step
    assert "## Files to change\n- leap.py" in instructions
    assert ("## Tests\nThe tests in test_leap.py cover this change: make them pass. Do not change test files."
            in instructions)  # named; read-only only with AGENT_READS_TESTS
    assert "Whole request" not in instructions and "Conversation" not in instructions

    await graph.ainvoke(Command(resume={"approved": True, "reason": "yes", "modification": None}), config, context=ctx)

    final = (await graph.aget_state(config)).values
    assert matched(llm) == [] and final["git_outcome"] == "committed"
    report = final["final_result"]
    assert report.startswith("Done: Implement leap_year() in leap.py so that the tests in test_leap.py pass.")
    assert "Completed 1 of 1 steps. Changed files: leap.py." in report
    assert (tmp_path / exercise / "leap.py").read_text().strip() == LEAP.strip()


async def test_a_request_about_several_files_is_planned_in_one_call(graph: Any, ctx: RunContext, llm: Any,
                                                                     exercise: str) -> None:
    llm.script(Reply(match=node_marker("plan_steps"), name="plan_steps",
                     content=steps_json({"instructions": f"Write leap.\n{file_block('leap.py', LEAP)}",
                                         "step_type": "code", "files": ["leap.py"]},
                                        {"instructions": f"Document it.\n{file_block('README.md', '# leap')}",
                                         "step_type": "code", "files": ["README.md"]})))
    state, config = start("Implement leap_year() in leap.py and describe it in README.md", workspace_path=exercise)

    instructions = await told(graph, state, config, ctx)

    assert matched(llm) == ["plan_steps"]  # intake by the rules; the goal is the request: one planning call
    snapshot = (await graph.aget_state(config)).values
    assert [g["title"] for g in snapshot["goals"]] == ["Implement leap_year() in leap.py and describe it in README.md"]
    assert len(snapshot["steps"]) == 2
    assert instructions.count("## Whole request (this step is one part of it)") == 2  # each step is a part
    assert "The tests in test_leap.py cover this change" in instructions  # the first step's file is covered by it


async def test_a_step_plan_that_runs_away_falls_back_to_the_request_as_one_step(graph: Any, ctx: RunContext,
                                                                               llm: Any, exercise: str) -> None:
    runaway = '{"steps": [{"instructions": "' + "Open leap.py and add the function. " * 200
    llm.script(Reply(match=node_marker("plan_steps"), content=runaway, chunk_size=32, name="plan_steps"))
    query = f"Implement leap_year() in leap.py; mention it in README.md\n{file_block('leap.py', LEAP)}"
    state, config = start(query, workspace_path=exercise)

    await told(graph, state, config, ctx)

    assert matched(llm) == ["plan_steps", "plan_steps"]  # cut, asked once more shorter, then given up
    snapshot = (await graph.aget_state(config)).values
    assert [s["instructions"] for s in snapshot["steps"]] == [query]
    assert any(w.startswith("plán kroků se nepodařilo sestavit") for w in snapshot["warnings"])  # cs run
    assert snapshot["step_results"][0]["success"]  # the agent did the request as it was asked


@pytest.mark.settings(report_writer="model")
async def test_a_model_written_report_that_fails_falls_back_to_the_facts(graph: Any, ctx: RunContext, llm: Any,
                                                                        exercise: str) -> None:
    llm.script(Reply(match=node_marker("finalize"), status=500, error_body="model crashed", name="finalize"))
    state, config = start(REQUEST, workspace_path=exercise)
    await told(graph, state, config, ctx)

    await graph.ainvoke(Command(resume={"approved": True, "reason": "ano", "modification": None}), config, context=ctx)

    final = (await graph.aget_state(config)).values
    assert "finalize" in matched(llm)  # REPORT_WRITER=model asks the model
    assert final["final_result"].startswith("Dokončeno 1 z 1 kroků. Změněné soubory: leap.py.")
    assert "commitnuté ve větvi" in final["final_result"] and not final.get("error")


@pytest.mark.settings(report_writer="model")
async def test_a_model_written_report_is_used_when_it_is_plain_sentences(graph: Any, ctx: RunContext, llm: Any,
                                                                        exercise: str) -> None:
    llm.script(Reply(match=node_marker("finalize"), content="Funkce leap_year je hotová a testy prošly.",
                     name="finalize"))
    state, config = start(REQUEST, workspace_path=exercise)
    await told(graph, state, config, ctx)

    await graph.ainvoke(Command(resume={"approved": True, "reason": "ano", "modification": None}), config, context=ctx)

    report = (await graph.aget_state(config)).values["final_result"]
    assert report.startswith("Funkce leap_year je hotová a testy prošly.")


async def test_a_retry_after_failing_tests_fixes_the_failed_attempts_change(graph: Any, ctx: RunContext, llm: Any,
                                                                           exercise: str, tmp_path: Path) -> None:
    """Like a test loop: the second attempt finds the first one's change in place (only the tests
    failed), gets the failing output, and adds what was missing."""
    query = (f"Implement leap_year() in leap.py\n<<<FILE leap.py @1\n{LEAP}>>>\n"
             f"<<<FILE NOTES @2\nfixed\n>>>")
    state, config = start(query, workspace_path=exercise, rules=kotlin_rules(require_tests=True),
                          environment={"testCommand": "test -f NOTES"})

    instructions = await told(graph, state, config, ctx)

    snapshot = (await graph.aget_state(config)).values
    assert matched(llm) == []  # the first failure is retried with the failing output, no reflection call
    assert [r["attempt"] for r in snapshot["step_results"]] == [1, 2]
    assert snapshot["recovery"]["keep_changes"] is True and snapshot["recovery"]["source"] == "rule"
    assert "Your previous change is still in the files" in instructions
    repo = tmp_path / exercise
    assert (repo / "leap.py").read_text().strip() == LEAP.strip()  # attempt 1's change survived attempt 2
    assert (repo / "NOTES").exists()


def test_a_repeated_or_whole_file_failure_starts_the_retry_from_the_steps_start() -> None:
    caps = Caps(max_attempts=3, max_replans=2, max_questions=3)
    step = FailedStep(goal_index=0, step_index=0, attempt=1, critical=True)
    assert decide(None, step, caps, failure="Tests failed", reflected=False, tests_only=True).keep_changes
    assert not decide(None, step, caps, failure="lost add", reflected=False, tests_only=False).keep_changes
    again = FailedStep(goal_index=0, step_index=0, attempt=2, critical=True, repeats=1)
    assert not decide(None, again, caps, failure="Tests failed", reflected=False, tests_only=True).keep_changes


@pytest.mark.settings(agent_reads_tests=True)
async def test_with_agent_reads_tests_the_covering_tests_are_handed_over_read_only(graph: Any, ctx: RunContext,
                                                                                  llm: Any, exercise: str) -> None:
    state, config = start(f"{REQUEST}\n@@TASK", workspace_path=exercise)
    handed: list[str] = []

    async for _, chunk in graph.astream(state, config, context=ctx, stream_mode=["custom"]):
        if chunk.get("type") == "agent_log" and chunk["line"].startswith("task.json| "):
            handed.append(chunk["line"][len("task.json| "):])

    [task] = [json.loads(line) for line in handed]
    assert task["files"] == ["leap.py"] and task["read_files"] == ["test_leap.py"]


@pytest.mark.settings(reflection_from_attempt=2)
async def test_the_reflection_reads_the_end_of_the_failure_and_the_steps_diff(graph: Any, ctx: RunContext, llm: Any,
                                                                             exercise: str) -> None:
    llm.script(Reply(match=node_marker("reflect"), name="reflect", content=reflection(
        "retry_modified", root_cause="chybí rok 1900", hint="vrať False pro století nedělitelná 400")))
    query = ("Implement leap_year() in leap.py\n@@FAIL @1 first failure\n@@FAIL @2 second failure\n"
             "<<<FILE leap.py @1\nfirst = 1\n>>>\n<<<FILE leap.py @2\nsecond = 2\n>>>\n"
             f"<<<FILE leap.py @3\n{LEAP}>>>")
    state, config = start(query, workspace_path=exercise)

    instructions = await told(graph, state, config, ctx)

    [prompt] = [r.text for r in llm.requests if r.matched == "reflect"]
    assert "second failure" in prompt and "2 of 3" in prompt  # the reflection starts at the second failure
    assert "+second = 2" in prompt and "+first = 1" not in prompt  # the failed attempt's own diff
    assert "chybí rok 1900" in instructions and "vrať False pro století nedělitelná 400" in instructions
    snapshot = (await graph.aget_state(config)).values
    assert [(f["attempt"], f["action"]) for f in snapshot["failures"]] == [(1, "retry"), (2, "retry_modified")]


async def test_a_mixed_plans_answer_sees_the_earlier_steps_and_reaches_the_result_in_full(
        graph: Any, ctx: RunContext, llm: Any, exercise: str) -> None:
    explanation = " ".join(f"Year {1600 + 100 * n} is {'a' if n % 4 == 0 else 'no'} leap year, by rule {n}."
                           for n in range(16))  # > 500 characters, no repeating block
    llm.script(Reply(match=node_marker("plan_steps"), name="plan_steps",
                     content=steps_json({"instructions": f"Write leap.\n{file_block('leap.py', LEAP)}",
                                         "step_type": "code", "files": ["leap.py"]},
                                        {"instructions": "Explain the rule leap.py now implements",
                                         "step_type": "respond"})),
               Reply(match=node_marker("execute_step"), content=explanation, name="answer"))
    state, config = start("Implement leap_year() in leap.py and explain the rule in README.md", workspace_path=exercise)
    await told(graph, state, config, ctx)
    await graph.ainvoke(Command(resume={"approved": True, "reason": "ano", "modification": None}), config, context=ctx)

    [answer_call] = [r for r in llm.requests if r.matched == "answer"]
    assert "Earlier steps of this task:\n- Write leap." in answer_call.last_user  # the code step's result
    report = (await graph.aget_state(config)).values["final_result"]
    assert report.startswith(explanation.strip())  # the full answer, not a 300-character fact
    assert "Dokončeno 2 z 2 kroků. Změněné soubory: leap.py." in report and "Hotovo: Write leap.\n" in report


async def test_the_planner_sees_the_workspaces_source_files_but_not_its_tests(
        graph: Any, ctx: RunContext, llm: Any, exercise: str) -> None:
    """A request that names no file: the step planner is shown the existing files, so the embedded
    model plans on `leap.py` instead of inventing `src/leap.js`; the tests are not shown (shown, it
    planned a step editing them, which integrity refuses)."""
    llm.script(Reply(match=node_marker("plan_steps"), name="plan_steps",
                     content=steps_json({"instructions": f"Write leap.\n{file_block('leap.py', LEAP)}",
                                         "step_type": "code", "files": ["leap.py"]})))
    state, config = start("Implement the leap year rule in the calendar module", workspace_path=exercise)
    await told(graph, state, config, ctx)

    [planned] = [r for r in llm.requests if r.matched == "plan_steps"]
    listing = planned.last_user.split("## Existing files (use these paths; change only what the task needs)\n", 1)
    assert len(listing) == 2, planned.last_user
    assert listing[1].split("\n\n", 1)[0] == "- README.md\n- leap.py"  # test_leap.py left out


HANGING = "import time\ntime.sleep(600)\n\n\ndef leap_year(year):\n    return False\n"


@pytest.mark.settings(test_timeout_floor_seconds=2)
async def test_tests_a_change_makes_hang_are_stopped_after_a_multiple_of_the_earlier_runs(
        graph: Any, ctx: RunContext, llm: Any, exercise: str) -> None:
    """Seen on the benchmark: an attempt's endless loop held the test run for 150 s (and gigabytes)
    although the earlier run had taken a tenth of a second."""
    query = ("Implement leap_year() in leap.py\n<<<FILE leap.py @1\ndef leap_year(year):\n    return True\n>>>\n"
             f"<<<FILE leap.py @2\n{HANGING}>>>\n<<<FILE leap.py @3+\n{LEAP}>>>")
    state, config = start(query, workspace_path=exercise, rules=kotlin_rules(require_tests=True))
    started = time.monotonic()

    instructions = await told(graph, state, config, ctx)

    assert time.monotonic() - started < 60  # not TEST_TIMEOUT_SECONDS (600)
    snapshot = (await graph.aget_state(config)).values
    assert snapshot["test_plan"]["command"] == ["python3", "-m", "unittest", "discover"]  # found beside the code
    assert [r["attempt"] for r in snapshot["step_results"]] == [1, 2, 3]
    assert snapshot["step_results"][-1]["success"] is True
    stopped = re.search(r"Tests timed out after (\d+) s", instructions)  # attempt 3 is told why attempt 2 failed
    assert stopped is not None and 2 <= int(stopped.group(1)) <= math.ceil(10 * snapshot["test_seconds"])


def test_the_deadline_of_a_test_run_follows_the_runs_that_measured_the_suite() -> None:
    assert deadline_for_tests(600, 60, None) == 600  # nothing measured yet: the setting
    assert deadline_for_tests(600, 60, 0.3) == 60  # a quick suite: the floor
    assert deadline_for_tests(600, 60, 12.5) == 125
    assert deadline_for_tests(600, 60, 300) == 600  # never past the setting
