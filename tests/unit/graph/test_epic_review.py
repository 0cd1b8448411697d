"""An epic's whole change reviewed after its last goal (app/graph/nodes/review_epic.py), in-process
with the scripted LLM and agent on a real git workspace: a rejection adds one fix-up goal that is
reviewed again, the verdict reaches the report, and no verdict is a warning, not a failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

from app.graph.context import RunContext
from tests.fixtures.llm_server import RecordedRequest, Reply
from tests.support import classification, file_block, git, make_git_repo, node_marker
from tests.unit.graph.graph_support import matched, nodes_of, start

GOALS = [{"id": "a", "title": "Add alpha", "dependencies": []},
         {"id": "b", "title": "Add beta", "dependencies": []}]
FILES = {"Add alpha": ("alpha.py", "def alpha():\n    return 1\n"),
         "Add beta": ("beta.py", "def beta():\n    return 2\n"),
         "Oprav, co našla kontrola celé změny": ("beta.py", '"""Beta."""\n\n\ndef beta():\n    return 2\n')}
REJECTED = json.dumps({"approved": False, "issues": ["the beta module has no docstring"], "summary": "almost"})
APPROVED = json.dumps({"approved": True, "issues": [], "summary": "Both functions are there."})


def steps(request: RecordedRequest) -> str:
    title = request.last_user.split("## Goal\n", 1)[1].split("\n", 1)[0]
    path, content = FILES[title]
    return json.dumps({"steps": [{"instructions": f"Write {path}\n{file_block(path, content)}", "step_type": "code",
                                  "files": [path]}]})


def script(*reviews: Reply) -> list[Reply]:
    return [Reply(match=node_marker("intake"), content=classification("epic", "code", "complex"), name="intake"),
            Reply(match=node_marker("plan_epic"), content=json.dumps({"goals": GOALS}), name="plan_epic"),
            Reply(match=node_marker("plan_steps"), content=steps, name="plan_steps"), *reviews]


@pytest.fixture
def workspace(tmp_path: Path) -> str:
    make_git_repo(tmp_path / "clients/c1/epic")
    return "clients/c1/epic"


async def run_to_commit(graph: Any, ctx: RunContext, query: str,
                        workspace: str) -> tuple[dict[str, Any], list[str], str]:
    """The epic approved, run to its commit gate and committed: its final state, the nodes after
    the plan gate, and what the commit gate said."""
    state, config = start(query, workspace_path=workspace)
    await graph.ainvoke(state, config, context=ctx)  # to the plan gate
    nodes = await nodes_of(graph, Command(resume={"approved": True, "reason": "yes", "modification": None}), config,
                           ctx)
    snapshot = await graph.aget_state(config)
    assert snapshot.next == ("git_operations",)  # the commit gate
    gate = snapshot.tasks[0].interrupts[0].value["description"]
    await graph.ainvoke(Command(resume={"approved": True, "reason": "yes", "modification": None}), config, context=ctx)
    return (await graph.aget_state(config)).values, nodes, gate


async def test_a_rejected_epic_gets_a_fix_up_goal_and_is_reviewed_again(graph: Any, ctx: RunContext, llm: Any,
                                                                       workspace: str, tmp_path: Path) -> None:
    llm.script(*script(Reply(match=node_marker("review_epic"), content=REJECTED, times=1, name="review"),
                       Reply(match=node_marker("review_epic"), content=APPROVED, name="review")))

    final, nodes, gate = await run_to_commit(graph, ctx, "Postav alfu a betu", workspace)

    gate_lines = gate.splitlines()
    assert gate_lines[1:4] == ["1. Add alpha: alpha.py", "2. Add beta: beta.py",
                               "3. Oprav, co našla kontrola celé změny: beta.py"]
    assert " alpha.py | 3 +++" in gate and gate.endswith("2 files changed, 9 insertions(+)")  # the run's stat
    reviews = [r for r in llm.requests if r.matched == "review"]
    assert len(reviews) == 2
    first = reviews[0].last_user
    assert "1. Add alpha: " in first and "2. Add beta: " in first and "alpha.py" in first and "+def beta():" in first
    assert "## Goals\n1. Add alpha" in reviews[1].last_user and "3. Oprav, co našla kontrola" in reviews[1].last_user
    assert nodes.count("review_epic") == 2 and nodes[-2:] == ["review_epic", "__interrupt__"]  # the commit gate
    assert [g["id"] for g in final["goals"]] == ["a", "b", "review-fix-1"]
    assert final["goals"][2]["description"] == "the beta module has no docstring"
    assert (final["epic_review"]["status"], final["epic_review"]["round"]) == ("approved", 2)
    assert "Kontrola celé změny ji schválila: Both functions are there." in final["final_result"]
    repo = tmp_path / workspace
    assert (repo / "beta.py").read_text().startswith('"""Beta."""')
    commits = [git(repo, "show", "--name-only", "--format=%s", rev).split("\n\n")
               for rev in ("HEAD~2", "HEAD~1", "HEAD")]
    assert [(title.split(" ", 1)[1], names.split()) for title, names in commits] == [  # one commit per goal
        ("Add alpha", ["alpha.py"]), ("Add beta", ["beta.py"]), ("Oprav, co našla kontrola celé změny", ["beta.py"])]


@pytest.mark.settings(epic_review_fixups=0)
async def test_issues_left_after_the_fix_ups_are_reported_not_fixed(graph: Any, ctx: RunContext, llm: Any,
                                                                   workspace: str) -> None:
    llm.script(*script(Reply(match=node_marker("review_epic"), content=REJECTED, name="review")))

    final, nodes, _ = await run_to_commit(graph, ctx, "Postav alfu a betu", workspace)

    assert nodes.count("review_epic") == 1 and [g["id"] for g in final["goals"]] == ["a", "b"]
    assert "Kontrola celé změny stále našla: the beta module has no docstring" in final["final_result"]
    assert final["git_outcome"] == "committed" and not final.get("error")


async def test_no_verdict_is_a_warning_and_the_work_is_still_offered(graph: Any, ctx: RunContext, llm: Any,
                                                                   workspace: str) -> None:
    llm.script(*script(Reply(match=node_marker("review_epic"), status=500, error_body="model crashed", name="review")))

    final, _, _ = await run_to_commit(graph, ctx, "Postav alfu a betu", workspace)

    assert final["epic_review"]["status"] == "no_verdict"
    assert any(w.startswith("kontrola celé změny nedala verdikt") for w in final["warnings"])
    assert final["git_outcome"] == "committed" and "review" in matched(llm)
