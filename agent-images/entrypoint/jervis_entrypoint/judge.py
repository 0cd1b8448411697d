"""Whether an agent step succeeded: never the agent's word alone, since Aider exits 0 after an LLM
error and Claude Code reports `is_error` in its JSON; the exit code, the agent's own report and
its output all have to agree."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .common import string_list, text_field
from .process import AgentRun

#: Lines Aider prints for LLM errors (authentication, connection, server) before it exits 0 anyway.
#: Anchored at the line start, so code or prose the model wrote about errors does not match.
AIDER_ERROR = re.compile(r"^(litellm\.\w*(Error|Exception)\b|The API provider's servers are down)")


@dataclass
class Verdict:
    """The entrypoint's judgement of one agent run, before changed files are added."""

    success: bool
    summary: str
    cost_usd: float | None = None
    claimed_files: list[str] = field(default_factory=list)


def judge(agent_type: str, run: AgentRun, own: dict[str, Any] | None) -> Verdict:
    """Success needs a clean exit, no error in the agent's own report, and no failure the agent
    reported itself; the summary prefers the agent's own words."""
    if run.start_error is not None:
        return Verdict(False, f"Agent {agent_type} could not be started: {run.start_error}")
    verdict = judge_output(agent_type, run)
    own_summary = text_field(own or {}, "summary")
    if own is not None:
        verdict.claimed_files = string_list(own.get("changedFiles"))
        if own.get("success") is not True:
            verdict.success = False
        if own_summary.strip():
            verdict.summary = own_summary.strip()
    elif agent_type == "command":  # a command agent must report (spec §10.4); the others never do
        verdict = Verdict(False, "Agent exited 0 but wrote no .jervis/result.json" if run.exit_code == 0
                          else "Agent wrote no .jervis/result.json")
    if run.signalled:
        verdict.success = False
        verdict.summary = f"Agent stopped by {run.signalled}: {verdict.summary}"
    if run.exit_code not in (0, None):
        verdict.success = False
        verdict.summary = f"{verdict.summary} (agent exited with code {run.exit_code})"
    return verdict


def judge_output(agent_type: str, run: AgentRun) -> Verdict:
    """What the agent's own output says, before its result file and exit code are considered."""
    if agent_type == "claude":
        return judge_claude(run.result_json)
    if agent_type == "aider":
        return judge_aider(run.tail)
    if agent_type == "openhands":
        return judge_openhands(run.result_json)
    return Verdict(run.exit_code == 0, f"Agent {agent_type} finished" if run.exit_code == 0 else
                   f"Agent {agent_type} failed")


def judge_openhands(report: dict[str, Any] | None) -> Verdict:
    """The runner's last line (`openhands_agent.py`): only `status: finished` without `is_error` is a
    success; an error, a stuck agent, too many steps or a stop are failures, in its own words."""
    if report is None:
        return Verdict(False, "OpenHands printed no result")
    summary = text_field(report, "summary").strip()
    if report.get("status") == "finished" and report.get("is_error") is False:
        return Verdict(True, summary or "OpenHands finished")
    return Verdict(False, summary or f"OpenHands ended as {text_field(report, 'status') or 'unknown'}")


def judge_claude(report: dict[str, Any] | None) -> Verdict:
    """Claude Code's JSON result: `subtype: success` is not enough, `is_error` must be false."""
    if report is None:
        return Verdict(False, "Claude Code printed no JSON result")
    cost = report.get("total_cost_usd")
    cost_usd = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
    text = text_field(report, "result")
    ok = report.get("is_error") is False and report.get("subtype") == "success"
    if ok:
        return Verdict(True, text.strip() or "Claude Code finished", cost_usd)
    reason = text.strip() or str(report.get("subtype") or "error")
    return Verdict(False, f"Claude Code reported an error: {reason}", cost_usd)


def judge_aider(tail: list[str]) -> Verdict:
    """Aider exits 0 after authentication and connection errors; its output tells."""
    errors = [line.strip() for line in tail if AIDER_ERROR.match(line.strip())]
    if errors:
        return Verdict(False, f"Aider reported an error: {errors[-1][:500]}")
    return Verdict(True, "Aider finished")
