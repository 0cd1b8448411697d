"""A code step whose agent reports success but changes nothing fails in the run's language
(app/agents/outcome.py marks it, execute_step words it): the user reads it in retry progress and
in the question after the last attempt, so it must not be English in a Czech run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.graph.context import RunContext
from tests.support import code_task_script, make_git_repo
from tests.unit.graph.graph_support import start


async def test_a_step_that_changed_nothing_fails_in_czech_in_a_czech_run(graph: Any, ctx: RunContext, llm: Any,
                                                                         tmp_path: Path) -> None:
    make_git_repo(tmp_path / "clients/c1/nothing")
    llm.script(*code_task_script(files={}))  # the scripted agent writes nothing and says "Nothing to change"
    state, config = start("Uprav app.py", workspace_path="clients/c1/nothing")

    await graph.ainvoke(state, config, context=ctx)

    values = (await graph.aget_state(config)).values
    reasons = [f["reason"] for f in values["failures"]]
    assert reasons and all(r == "Agent ohlásil úspěch, ale nezměnil žádný soubor: Nothing to change"
                           for r in reasons), reasons
    assert "changed no file" not in str(values)
