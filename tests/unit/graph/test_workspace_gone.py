"""An epic whose workspace is gone while its plan waits for the user ends, once approved, with the
error naming it (`WorkspaceMissingError`, which the run manager reports) before any goal runs:
no wave (no repository to branch from), no worktree, no goal folder, nothing created in the
workspace's place. (`run_goal` checks the same for a workspace gone after its wave began.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

from app.agents.workspace import WorkspaceMissingError
from app.graph.context import RunContext
from tests.fixtures.llm_server import Reply
from tests.support import classification, file_block, make_git_repo, node_marker
from tests.unit.graph.graph_support import start

pytestmark = pytest.mark.settings(epic_max_parallel_goals=2, response_language="en")

GOALS = [{"id": "a", "title": "Add alpha", "dependencies": [], "description": file_block("alpha.py", "A = 1")},
         {"id": "c", "title": "Add gamma", "dependencies": [], "description": file_block("gamma.py", "C = 3")}]


async def test_an_epic_on_a_workspace_gone_while_the_plan_waited_ends_the_run_naming_it(
        graph: Any, ctx: RunContext, llm: Any, tmp_path: Path) -> None:
    workspace = make_git_repo(tmp_path / "clients/c1/waves")
    llm.script(Reply(match=node_marker("intake"), content=classification("epic", "code", "complex")),
               Reply(match=node_marker("plan_epic"), content=json.dumps({"goals": GOALS})))
    state, config = start("Build alpha and gamma", workspace_path="clients/c1/waves")
    await graph.ainvoke(state, config, context=ctx)  # waits at the plan gate
    assert (await graph.aget_state(config)).next
    shutil.rmtree(workspace)

    with pytest.raises(WorkspaceMissingError, match=r"clients/c1/waves does not exist under DATA_ROOT"):
        await graph.ainvoke(Command(resume={"approved": True, "reason": "yes", "modification": None}), config,
                            context=ctx)

    assert not workspace.exists() and not workspace.with_name("waves.jervis-goals").exists()
