"""How a finished agent step is judged, the same way for every runner.

The agent's word is not enough: a valid `.jervis/result.json` must exist, the process must have
exited 0, and a code step that reports success without changing anything has failed.
"""

from __future__ import annotations

from app.agents.base import AgentJob, AgentResult
from app.agents.workspace import ResultFileError, WorkspaceManager


def judge(workspaces: WorkspaceManager, job: AgentJob, *, exit_code: int | None, log_tail: str,
          failure: str | None = None) -> AgentResult:
    """`failure` is what the runner already knows went wrong (timeout, bad image, …)."""
    if failure is not None:
        return AgentResult(success=False, summary=failure, exit_code=exit_code, log_tail=log_tail)
    try:
        result = workspaces.read_result(job.workspace)
    except ResultFileError as exc:
        summary = f"{exc} (exit code {exit_code})" if exit_code is not None else str(exc)
        return AgentResult(success=False, summary=summary, exit_code=exit_code, log_tail=log_tail)
    success = result.success and exit_code in (0, None)
    summary = result.summary or ("done" if success else "failed")
    if result.success and exit_code not in (0, None):
        summary = f"{summary} (but the agent exited with code {exit_code})"
    if result.exit_code is not None:  # the agent's own code, behind the entrypoint's
        exit_code = result.exit_code
    unchanged = success and job.expect_changes and not result.changed_files
    return AgentResult(
        success=success and not unchanged, summary=summary, unchanged=unchanged, changed_files=result.changed_files,
        exit_code=exit_code,
        cost_usd=result.cost_usd, tokens=result.tokens, commit_sha=result.commit_sha,
        # The entrypoint's tail of a test run is the command's own output, without our log lines.
        log_tail=(result.log_tail or log_tail) if job.mode == "test" else (log_tail or result.log_tail),
        test_outcome=result.test_outcome,
    )


def uncleaned(result: AgentResult, problem: str | None) -> AgentResult:
    """The step's result once its workspace was cleaned (`WorkspaceManager.cleanup`): a cleanup
    that failed fails the step, saying what was left, whatever the agent reported; a test run's
    own verdict goes with it."""
    if problem is None:
        return result
    return result.model_copy(update={"success": False, "summary": f"{result.summary.rstrip('.')}. {problem}",
                                     "unchanged": False, "test_outcome": None})
