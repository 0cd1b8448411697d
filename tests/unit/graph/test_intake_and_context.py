"""Intake that does not fail silently, answers in the request's language, the conversation reaching
planners and agents, and a finalize that a spent budget cannot turn into an error — the compiled
graph in-process against the scripted LLM (fixtures in conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.runtime import Runtime

from app.config import Settings
from app.graph.context import RunContext
from app.graph.nodes.finalize import finalize
from app.graph.run_state import run_language
from app.llm.budget import BudgetLimits, BudgetTracker, Usage
from app.llm.scope import LlmScope, use_scope
from app.texts import CS, EN, Texts
from tests.fixtures.llm_server import Reply
from tests.support import classification, file_block, make_git_repo, node_marker, steps_json
from tests.unit.graph.graph_support import matched, start

SUBTRACT = file_block("calc.py", "def add(a, b):\n    return a + b\n\n\ndef subtract(a, b):\n    return a - b")
#: A request about one file: planned as one step that is the request itself, so the scripted agent's
#: file block travels in it.
CODE_REQUEST = f"Add a subtract(a, b) function to calc.py\n{SUBTRACT}"
#: The model classifies here (these tests are about its answers); the rules still correct it.
pytestmark = pytest.mark.settings(intake_by_rules=False)


def code_script(intake: str | Reply, **extra: Reply) -> list[Reply]:
    first = intake if isinstance(intake, Reply) else Reply(match=node_marker("intake"), content=intake, name="intake")
    return [first, Reply(match=node_marker("plan_steps"), content=steps_json(SUBTRACT), name="plan_steps"),
            *extra.values()]


@pytest.fixture
def project(tmp_path: Path) -> str:
    """A small repository: code requests have a workspace to go to."""
    rel = "clients/c1/calc"
    repo = make_git_repo(tmp_path / rel)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return rel


async def test_empty_classification_is_repaired_once_then_falls_back_to_code(graph: Any, ctx: RunContext,
                                                                             llm: Any, project: str) -> None:
    llm.script(*code_script("{}"))
    state, config = start(CODE_REQUEST, workspace_path=project)

    result = await graph.ainvoke(state, config, context=ctx)

    assert (result["task_category"], result["task_action"]) == ("single_task", "code")
    assert matched(llm) == ["intake", "intake"]  # the repair round; one file: no planning call
    fallback = CS.warning_classification_fallback.format(category="single_task", action="code", error="")
    assert any(w.startswith(fallback) for w in result["warnings"])  # in the run's language (cs here)
    assert result["__interrupt__"][0].value["action"] == "commit"


@pytest.mark.parametrize("t", [pytest.param(CS, marks=pytest.mark.settings(response_language="cs"), id="cs"),
                               pytest.param(EN, marks=pytest.mark.settings(response_language="en"), id="en")])
async def test_unparseable_classification_of_a_question_falls_back_to_advice_with_a_warning(
        graph: Any, ctx: RunContext, llm: Any, project: str, t: Texts) -> None:
    llm.script(Reply(match=node_marker("intake"), content="I think this is a question.", name="intake"),
               Reply(match=node_marker("respond"), content="It adds numbers.", name="respond"))
    state, config = start("What does calc.py do?", workspace_path=project)

    result = await graph.ainvoke(state, config, context=ctx)

    assert result["task_category"] == "advice" and result["final_result"].startswith("It adds numbers.")
    fallback = t.warning_classification_fallback.format(category="advice", action="respond", error="")
    assert fallback in result["final_result"]  # said, not silent, in the run's language


@pytest.mark.parametrize("misnamed", [{"category": "single_task", "action": "code"},
                                      {"taskCategory": "single_task", "taskAction": "code"}],
                         ids=["short-names", "camel-case"])
async def test_misnamed_classification_keys_are_understood(graph: Any, ctx: RunContext, llm: Any, project: str,
                                                           misnamed: dict[str, str]) -> None:
    llm.script(*code_script(json.dumps(misnamed)))
    state, config = start(CODE_REQUEST, workspace_path=project)

    result = await graph.ainvoke(state, config, context=ctx)

    assert (result["task_category"], result["task_action"]) == ("single_task", "code")
    assert matched(llm) == ["intake"] and not result.get("warnings")


@pytest.mark.settings(response_language="auto")
async def test_model_saying_advice_for_an_english_code_request_is_overruled_and_answered_in_english(
        graph: Any, ctx: RunContext, llm: Any, project: str) -> None:
    llm.script(*code_script(classification("advice", "respond")))
    state, config = start(CODE_REQUEST, workspace_path=project)

    result = await graph.ainvoke(state, config, context=ctx)

    assert (result["task_category"], result["task_action"]) == ("single_task", "code")
    assert run_language(result, ctx.settings) == "en"
    description = result["__interrupt__"][0].value["description"]
    assert description == f"Commit 1 changed files to branch 'task/{state['task']['id']}'"
    intake_prompt = next(r for r in llm.requests if r.matched == "intake")
    assert "Write every human-readable text in English." in intake_prompt.text


async def test_a_question_stays_advice_even_with_a_workspace(graph: Any, ctx: RunContext, llm: Any,
                                                             project: str) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification("advice", "respond"), name="intake"),
               Reply(match=node_marker("respond"), content="Sčítá.", name="respond"))
    state, config = start("Co dělá funkce add v calc.py?", workspace_path=project)

    result = await graph.ainvoke(state, config, context=ctx)

    assert result["task_category"] == "advice" and result["final_result"] == "Sčítá."


async def test_only_issue_keys_written_in_the_request_are_kept(graph: Any, ctx: RunContext, llm: Any,
                                                               kb: Any) -> None:
    answer = json.loads(classification("advice", "respond")) | {"external_refs": ["UFO-24", "ABC-12", "abc-12",
                                                                                 "ticket"]}
    llm.script(Reply(match=node_marker("intake"), content=json.dumps(answer), name="intake"),
               Reply(match=node_marker("respond"), content="OK", name="respond"))
    state, config = start("Co říká ticket ABC-12?")

    result = await graph.ainvoke(state, config, context=ctx)

    assert result["external_refs"] == ["ABC-12"]  # no invented key, no duplicate, no word that is not a key
    assert result["evidence_pack"]["external_refs"] == ["ABC-12"]


async def test_the_conversation_reaches_the_planners_and_the_agents_instructions(graph: Any, ctx: RunContext,
                                                                                 llm: Any, project: str) -> None:
    history = {
        "recent_messages": [{"role": "user", "content": "Přidej endpoint /users s paginací", "sequence": 1,
                             "timestamp": "2026-11-22T10:00:00Z"},
                            {"role": "assistant", "content": "Hotovo: /users stránkuje po 20.", "sequence": 2,
                             "timestamp": "2026-11-22T10:05:00Z"}],
        "summary_blocks": [{"sequence_range": "1-2", "summary": "Stránkování po 20 položkách.",
                            "key_decisions": ["stránka = 20"]}],
        "total_message_count": 2,
    }
    llm.script(*code_script(classification("single_task", "code")))
    state, config = start("Udělej totéž co včera, ale pro endpoint /orders", workspace_path=project,
                          chat_history=history)
    told: list[str] = []

    async for mode, chunk in graph.astream(state, config, context=ctx, stream_mode=["custom", "updates"]):
        if mode == "custom" and chunk.get("type") == "agent_log" and chunk["line"].startswith("instructions| "):
            told.append(chunk["line"])

    assert matched(llm) == ["intake", "plan_steps"]  # a single task: its steps in one planning call
    prompt = next(r.text for r in llm.requests if r.matched == "plan_steps")
    assert "Přidej endpoint /users s paginací" in prompt and "Stránkování po 20 položkách." in prompt
    instructions = "\n".join(told)
    assert "## Conversation before this request" in instructions and "/users stránkuje po 20" in instructions


@pytest.mark.settings(report_writer="model")
async def test_budget_spent_at_the_final_report_keeps_a_finished_run_done(ctx: RunContext, llm: Any) -> None:
    tracker = BudgetTracker(limits=BudgetLimits(max_tokens=100))
    tracker.record("plan", "local_fast", Usage(prompt_tokens=90, completion_tokens=20, calls=1))
    state = {"task": {"id": "t1", "query": "Přidej endpoint"}, "language": "cs", "git_outcome": "committed",
             "branch": "task/t1", "commit_sha": "b" * 40, "warnings": ["Testy nebyly spuštěny: make chybí"],
             "step_results": [{"step_index": 0, "success": True, "summary": "přidán", "changed_files": ["a.py"],
                               "step_type": "code"}]}

    with use_scope(LlmScope(budget=tracker, can_ask=False)):
        update = await finalize(state, Runtime(context=ctx))

    assert "error" not in update and llm.requests == []  # no LLM call past the budget
    report = update["final_result"]
    assert report.startswith("Dokončeno 1 z 1 kroků. Změněné soubory: a.py. Větev task/t1, commit bbbbbbbbbbbb.")
    assert "Rozpočet LLM byl vyčerpán při závěrečné zprávě" in report
    assert report.count("Testy nebyly spuštěny: make chybí") == 1  # the structured report's notices, once
    assert report.endswith("Změny jsou commitnuté ve větvi task/t1.")


@pytest.mark.parametrize(
    ("state", "configured", "expected"),
    [({"task": {"query": "Add a subtract(a, b) function to calc.py"}}, "auto", "en"),
     ({"task": {"query": "Přidej funkci subtract"}}, "auto", "cs"),
     ({"task": {"query": "Add a subtract function", "language": "cs"}}, "auto", "cs"),
     ({"task": {"query": "Add a subtract function"}, "language": "cs"}, "auto", "cs"),
     ({"task": {"query": "Add a subtract function"}}, "de", "de")],
    ids=["english-request-undecided", "czech-request-undecided", "decided-at-dispatch", "known-to-the-caller",
         "configured"],
)
def test_run_language_is_the_requests_own_unless_decided(state: dict[str, Any], configured: str,
                                                                 expected: str) -> None:
    # The first progress push (intake's) is already in the user's language.
    assert run_language(state, Settings(response_language=configured)) == expected
