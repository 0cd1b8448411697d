"""The compiled graph in-process (app/graph/builder.py): in-memory checkpointer, real services on loopback.

The LLM, KB and Kotlin are the fake servers, the context store is nx-27017, agents run through
the LocalRunner with the built-in scripted agent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

from app.graph.builder import NODE_NAMES, build_graph
from app.graph.context import RunContext
from tests.fixtures.llm_server import RecordedRequest, Reply
from tests.support import advice_script, classification, code_task_script, git, make_git_repo, node_marker
from tests.unit.graph.graph_support import matched, nodes_of, start

SPEC_NODES = {"intake", "evidence_pack", "respond", "plan", "plan_epic", "design", "select_goal", "plan_steps",
              "execute_step", "evaluate", "advance_step", "advance_goal", "git_operations", "finalize"}
REJECTED = "Plán byl zamítnut uživatelem; nic nebylo provedeno."


def test_node_names_contain_every_node_of_the_spec() -> None:
    assert SPEC_NODES <= NODE_NAMES
    assert set(build_graph().nodes) == NODE_NAMES


# --------------------------------------------------------------------- advice
async def test_advice_run_answers_through_respond_and_finalize(graph: Any, ctx: RunContext, llm: Any,
                                                               kb: Any) -> None:
    kb.add_chunk("Jervis orchestrates coding agents", "doc:jervis", client_id="67a9b1c2d3e4f5a6b7c8d9e0")
    llm.script(*advice_script("Jervis umí odpovídat na otázky."))
    state, config = start("Co umí Jervis orchestrovat?")

    result = await graph.ainvoke(state, config, context=ctx)

    assert result["final_result"] == "Jervis umí odpovídat na otázky."
    # Empty values are not written (app/graph/writes.py): no artifacts reads as an absent key.
    assert result["task_category"] == "advice" and "artifacts" not in result
    assert "__interrupt__" not in result and not result.get("error")
    assert matched(llm) == ["respond"]  # a plain question: classified by the rules, no intake call
    assert kb.requests, "intake and evidence_pack ask the KB"


async def test_the_next_request_in_a_chat_reads_how_the_previous_one_ended(graph: Any, ctx: RunContext,
                                                                          llm: Any) -> None:
    llm.script(Reply(match=node_marker("respond"), content="Endpoint /health vrací stav služby.", name="respond"))
    first, first_config = start("Co dělá endpoint /health?")
    await graph.ainvoke(first, first_config, context=ctx)
    await ctx.context_store.drain()
    # The same chat (Kotlin's task id), a new run: another thread.
    second, _ = start("A co vrací při chybě?", task_id=first["task"]["id"])
    second_config = {"configurable": {"thread_id": f"thread-{first['task']['id']}-0000beef"}, "recursion_limit": 150}

    await graph.ainvoke(second, second_config, context=ctx)

    later = [r for r in llm.requests if r.matched == "respond"][1]
    assert ("Earlier in this conversation (how the previous request ended): Endpoint /health vrací stav služby."
            in later.last_user)
    first_run = await ctx.context_store.get(first_config["configurable"]["thread_id"], "task", "final")
    assert first_run is not None and first_run.summary == "Endpoint /health vrací stav služby."  # not overwritten


# ----------------------------------------------------------------------- epic
EPIC_GOALS = [
    {"id": "g1", "title": "Backend API", "description": "REST", "complexity": "medium", "dependencies": []},
    {"id": "g2", "title": "Frontend", "description": "UI", "complexity": "simple", "dependencies": ["g1"]},
    {"id": "g3", "title": "Docs", "description": "README", "complexity": "simple", "dependencies": ["g1"]},
]


def epic_script(goal_list: list[dict[str, Any]] = EPIC_GOALS) -> list[Reply]:
    goals = {"goals": goal_list}

    def steps(request: RecordedRequest) -> str:
        title = request.last_user.split("## Goal\n", 1)[1].split("\n", 1)[0]
        return json.dumps({"steps": [{"instructions": f"Explain {title}", "step_type": "respond"}]})

    def answer(request: RecordedRequest) -> str:
        return request.last_user.split("## Step\nExplain ", 1)[1].split("\n", 1)[0] + " hotovo."

    return [
        Reply(match=node_marker("intake"), content=classification("epic", "code", "complex"), name="intake"),
        Reply(match=node_marker("plan_epic"), content=json.dumps(goals), name="plan_epic"),
        Reply(match=node_marker("plan_steps"), content=steps, name="plan_steps"),
        Reply(match=node_marker("execute_step"), content=answer, name="execute_step"),
    ]


async def test_epic_run_interrupts_for_plan_approval_with_goal_and_wave_counts(graph: Any, ctx: RunContext,
                                                                               llm: Any) -> None:
    llm.script(*epic_script())
    state, config = start("Postav webshop")

    result = await graph.ainvoke(state, config, context=ctx)

    [interrupt] = result["__interrupt__"]
    payload = interrupt.value
    assert (payload["type"], payload["action"]) == ("approval_request", "epic_plan")
    assert (payload["goals_count"], payload["waves_count"]) == (3, 2)
    assert payload["task_id"] == state["task"]["id"]
    description = payload["description"]
    assert "1. Backend API" in description and "2. Frontend (po: 1)" in description and "Vlna 2:" in description
    assert matched(llm) == ["intake", "plan_epic"]
    assert (await graph.aget_state(config)).next == ("approve_plan",)


@pytest.mark.parametrize(
    "decision",
    [{"approved": False, "reason": "ne", "modification": None},
     {"approved": True, "reason": "neschvaluji", "modification": None}],  # Kotlin: contains "schval" → true
    ids=["not-approved", "kotlin-approved-but-refused"],
)
async def test_epic_run_ends_with_rejection_when_plan_is_refused(graph: Any, ctx: RunContext, llm: Any,
                                                                 decision: dict[str, Any]) -> None:
    llm.script(*epic_script())
    state, config = start("Postav webshop")
    await graph.ainvoke(state, config, context=ctx)

    nodes = await nodes_of(graph, Command(resume=decision), config, ctx)

    final = (await graph.aget_state(config)).values
    assert final["final_result"] == REJECTED
    assert final["goals"] == [] and not final.get("step_results")
    assert nodes == ["approve_plan", "finalize"]
    assert matched(llm) == ["intake", "plan_epic"]


async def test_epic_run_executes_goals_in_order_when_plan_is_approved(graph: Any, ctx: RunContext,
                                                                      llm: Any) -> None:
    llm.script(*epic_script())
    state, config = start("Postav webshop")
    await graph.ainvoke(state, config, context=ctx)

    nodes = await nodes_of(graph, Command(resume={"approved": True, "reason": "ano", "modification": None}),
                           config, ctx)

    per_goal = ["select_goal", "plan_steps", "execute_step", "evaluate"]
    assert nodes == ["approve_plan", *per_goal, "advance_goal", *per_goal, "advance_goal", *per_goal,
                     "advance_goal", "git_operations", "finalize"]
    final = (await graph.aget_state(config)).values
    assert final["final_result"] == "Backend API hotovo.\n\nFrontend hotovo.\n\nDocs hotovo."
    assert [g["id"] for g in final["goals"]] == ["g1", "g2", "g3"]
    assert [s["goal_id"] for s in final["goal_summaries"]] == ["g1", "g2", "g3"]  # the last goal too
    assert final["git_outcome"] == "no_changes"
    second_plan = [r for r in llm.requests if r.matched == "plan_steps"][1]
    assert "## Done in earlier goals\n- Backend API: Backend API hotovo." in second_plan.last_user
    step_context = await ctx.context_store.list(config["configurable"]["thread_id"], "goal")  # the run's entries
    assert [e.scope_key for e in step_context] == ["goal/0", "goal/1", "goal/2"]


async def test_epic_goals_run_in_the_approved_wave_order(graph: Any, ctx: RunContext, llm: Any) -> None:
    # [A, B after A, C]: the user approves waves {A, C} then {B}; the run does exactly that.
    llm.script(*epic_script([{"id": "a", "title": "Alpha", "dependencies": []},
                             {"id": "b", "title": "Beta", "dependencies": ["a"]},
                             {"id": "c", "title": "Gamma", "dependencies": ["goal 9"]}]))
    state, config = start("Postav webshop")
    result = await graph.ainvoke(state, config, context=ctx)

    description = result["__interrupt__"][0].value["description"]
    assert description.splitlines() == ["Plán: 3 cílů ve 2 vlnách", "Vlna 1:", "1. Alpha", "2. Gamma", "Vlna 2:",
                                        "3. Beta (po: 1)",
                                        "Cíl 2 závisel na „goal 9“, což není cíl tohoto plánu: nečeká na něj."]
    await graph.ainvoke(Command(resume={"approved": True, "reason": "ano", "modification": None}), config,
                        context=ctx)

    final = (await graph.aget_state(config)).values
    assert [g["id"] for g in final["goals"]] == ["a", "c", "b"]
    agent_steps = [r.last_user.split("## Step\nExplain ", 1)[1].split("\n", 1)[0]
                   for r in llm.requests if r.matched == "execute_step"]
    assert agent_steps == ["Alpha", "Gamma", "Beta"]


# ----------------------------------------------------------------------- code
@pytest.mark.settings(report_writer="model")
async def test_code_run_commits_the_agents_files_once_when_commit_is_approved(graph: Any, ctx: RunContext,
                                                                              llm: Any, tmp_path: Path) -> None:
    rel = "clients/c1/webshop"
    repo = make_git_repo(tmp_path / rel)
    llm.script(*code_task_script(summary="Hotovo: přidán endpoint."))
    state, config = start("Přidej endpoint /health do API", workspace_path=rel)
    task_id = state["task"]["id"]

    result = await graph.ainvoke(state, config, context=ctx)

    [interrupt] = result["__interrupt__"]
    assert interrupt.value["action"] == "commit"
    assert interrupt.value["changed_files"] == ["app/health.py"]
    assert interrupt.value["branch"] == f"task/{task_id}"
    assert (repo / "app/health.py").exists() and not (repo / ".jervis").exists()
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"  # nothing committed before approval

    await graph.ainvoke(Command(resume={"approved": True, "reason": "ano, commitni to", "modification": None}),
                        config, context=ctx)

    final = (await graph.aget_state(config)).values
    assert final["git_outcome"] == "committed" and final["branch"] == f"task/{task_id}"
    assert final["final_result"] == f"Hotovo: přidán endpoint.\n\nZměny jsou commitnuté ve větvi task/{task_id}."
    assert final["artifacts"] == ["app/health.py"]
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == f"task/{task_id}"
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "2"
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["app/health.py"]
    assert f"Jervis-Thread: {config['configurable']['thread_id']}" in git(repo, "log", "-1", "--format=%B")
    assert final["commit_sha"] == git(repo, "rev-parse", "HEAD").strip()


async def test_epic_run_asks_for_plan_approval_when_llm_repeats_a_goal_id(graph: Any, ctx: RunContext,
                                                                          llm: Any) -> None:
    # Small local models number goals carelessly; a repeated id must not crash the run.
    goals = {"goals": [{"id": "1", "title": "Backend", "dependencies": []},
                       {"id": "1", "title": "Frontend", "dependencies": []},
                       {"id": "2", "title": "Docs", "dependencies": ["1"]}]}
    llm.script(Reply(match=node_marker("intake"), content=classification("epic", "code", "complex")),
               Reply(match=node_marker("plan_epic"), content=json.dumps(goals)))
    state, config = start("Postav webshop")

    result = await graph.ainvoke(state, config, context=ctx)

    [interrupt] = result["__interrupt__"]
    assert interrupt.value["action"] == "epic_plan"
    assert interrupt.value["goals_count"] == 3
    assert "2. Frontend" in interrupt.value["description"]
