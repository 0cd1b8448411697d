"""A stalled agent (no output, no change: app/agents/stall.py) is a failed attempt like any other:
the reflection reads why, and the retry runs the step again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.graph.context import RunContext
from tests.fixtures.llm_server import Reply
from tests.support import file_block, make_git_repo, node_marker, reflection
from tests.unit.graph.graph_support import matched, start

STALLED = "Stalled: no output and no change in the workspace for 1 s"


@pytest.mark.settings(agent_stall_seconds=1.0, reflection_from_attempt=1)
async def test_a_stalled_attempt_is_reflected_on_and_retried(graph: Any, ctx: RunContext, llm: Any,
                                                             tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "clients/c1/stall")
    (repo / "calc.py").write_text("def add(a, b):\n    raise NotImplementedError\n")
    llm.script(Reply(match=node_marker("reflect"), name="reflect", content=reflection("retry")))
    query = ("Implement add() in calc.py\n@@SLEEP @1 60\n"
             + file_block("calc.py @2", "def add(a, b):\n    return a + b"))
    state, config = start(query, workspace_path="clients/c1/stall")

    await graph.ainvoke(state, config, context=ctx)  # to the commit approval

    values = (await graph.aget_state(config)).values
    assert [(r["attempt"], r["success"]) for r in values["step_results"]] == [(1, False), (2, True)]
    assert values["step_results"][0]["summary"].startswith(STALLED)
    assert [(f["attempt"], f["action"]) for f in values["failures"]] == [(1, "retry")]
    assert matched(llm) == ["reflect"]
    [prompt] = [r.text for r in llm.requests if r.matched == "reflect"]
    assert STALLED in prompt
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
