"""A run suspended mid-step (shutdown, lost lease) and resumed from its checkpoint: the step's
agent keeps running meanwhile, its hand-over stays, and the resumed step re-attaches to it.

In-process graph (in-memory checkpointer), the LocalRunner with the scripted agent behind a
command that counts its starts in a file beside the workspace.
"""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import Any

import pytest

from app.agents.control import AgentControl, use_control
from app.graph.context import RunContext
from tests.support import SCRIPTED_AGENT, code_task_script, make_git_repo
from tests.unit.agents.test_local import agent_pids, alive
from tests.unit.graph.graph_support import start

#: Runs in the workspace, so `../starts.txt` is beside it, outside what git sees.
COUNTED_AGENT = ["sh", "-c", f"echo started >> ../starts.txt && exec {shlex.join(SCRIPTED_AGENT)}"]


@pytest.fixture
def run_settings(run_settings: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """The folder beside the workspace, where the counter is, is one the agent's sandbox may write."""
    return {**run_settings, "agent_sandbox_writable": [str(tmp_path / "clients" / "c1")]}


@pytest.mark.settings(local_agent_command=COUNTED_AGENT)
async def test_a_step_suspended_mid_agent_resumes_by_reattaching_to_it(graph: Any, ctx: RunContext, llm: Any,
                                                                      tmp_path: Path) -> None:
    rel = "clients/c1/webshop"
    repo = make_git_repo(tmp_path / rel)
    llm.script(*code_task_script(extra_instructions="@@SLEEP 1.5"))
    state, config = start("Přidej endpoint /health do API", workspace_path=rel)
    control = AgentControl()

    async def run() -> Any:
        use_control(control)
        return await graph.ainvoke(state, config, context=ctx)

    running = asyncio.create_task(run())
    deadline = asyncio.get_running_loop().time() + 20
    starts = tmp_path / "clients/c1/starts.txt"
    # After the agent's own start line: earlier, a process in the workspace may be the service's git.
    while not (starts.exists() and (pids := agent_pids(repo))):
        assert asyncio.get_running_loop().time() < deadline, "the agent never started"
        await asyncio.sleep(0.02)
    control.suspend("shutdown")
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running

    assert all(alive(pid) for pid in pids)
    assert (repo / ".jervis" / "instructions.md").exists()  # not cleaned up under the running agent

    result = await graph.ainvoke(None, config, context=ctx)  # the adopting process resumes the thread

    [interrupt] = result["__interrupt__"]
    assert interrupt.value["action"] == "commit" and interrupt.value["changed_files"] == ["app/health.py"]
    assert starts.read_text().splitlines() == ["started"]
    assert not (repo / ".jervis").exists() and agent_pids(repo) == []
