"""MeteredRunner (app/agents/metered.py) around the LocalRunner with the scripted agent: the agent's
output is redacted before anything of the orchestrator sees it."""

from __future__ import annotations

from pathlib import Path

from app.agents.base import AgentJob
from app.agents.local import LocalRunner
from app.agents.metered import MeteredRunner
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from app.observability.metrics import Metrics
from app.observability.redaction import REDACTED, Redactor
from tests.support import SCRIPTED_AGENT, make_git_repo

CONFIGURED = "configured-kb-password"
TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123"


async def test_log_lines_summary_and_tail_of_an_agent_are_redacted(tmp_path: Path) -> None:
    workspaces = WorkspaceManager(tmp_path)
    repo = make_git_repo(tmp_path / "repo")
    runner = MeteredRunner(LocalRunner(workspaces, Settings(local_agent_command=SCRIPTED_AGENT)), Metrics(),
                           redact=Redactor([CONFIGURED]))
    job = AgentJob(thread_id="thread-t1-abcd", task_id="t1", client_id="c1", agent_type="command", workspace=repo)
    instructions = f"echo {TOKEN} and {CONFIGURED}\n@@FAIL push rejected for {TOKEN}"

    async def prepare() -> None:
        workspaces.prepare(repo, StepBrief(agent_type="command", instructions=instructions, task={"id": "t1"}))

    lines: list[str] = []
    result = await runner.run(job, prepare=prepare, on_log=lines.append)

    echoed = [line for line in lines if line.startswith("instructions| echo")]
    assert echoed == [f"instructions| echo ghp_{REDACTED} and {REDACTED}"]
    assert not result.success and result.summary == f"push rejected for ghp_{REDACTED}"
    assert TOKEN not in result.log_tail and CONFIGURED not in result.log_tail and REDACTED in result.log_tail
