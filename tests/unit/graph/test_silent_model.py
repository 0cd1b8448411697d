"""A model that goes silent while planning (no token within `HEARTBEAT_DEAD_SECONDS`) no longer
ends the run: the plan falls back to one step, the request itself, with a warning, and the step
runs (app/graph/nodes/plan.py, plan_steps.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.graph.context import RunContext
from tests.fixtures.llm_server import Reply
from tests.support import classification, file_block, make_git_repo, node_marker
from tests.unit.graph.graph_support import start

pytestmark = pytest.mark.settings(heartbeat_dead_seconds=1, response_language="en")


async def test_a_plan_the_model_never_starts_to_write_falls_back_to_one_step(graph: Any, ctx: RunContext, llm: Any,
                                                                            tmp_path: Path) -> None:
    make_git_repo(tmp_path / "clients/c1/silent")
    query = "Add three modules\n" + "\n".join(file_block(f"m{n}.py", f"N = {n}") for n in range(3))
    llm.script(Reply(match=node_marker("intake"), content=classification("single_task", "code", "medium")),
               Reply(match=node_marker("plan_steps"), content='{"steps": []}', delay_before=3, name="silent-plan"))
    state, config = start(query, workspace_path="clients/c1/silent")

    await graph.ainvoke(state, config, context=ctx)

    values = (await graph.aget_state(config)).values
    assert [r.matched for r in llm.requests].count("silent-plan") >= 1
    assert not values.get("halt") and not values.get("error")
    assert any("LLM heartbeat" in w for w in values.get("warnings", [])), values.get("warnings")
    assert [(tmp_path / f"clients/c1/silent/m{n}.py").read_text().strip() for n in range(3)] == [
        "N = 0", "N = 1", "N = 2"]
