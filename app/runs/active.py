"""One run executing (or just ended) on this pod, and what ended a run outside its graph."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.agents.control import AgentControl
from app.llm.scope import LlmScope
from app.runs.journal import RunJournal
from app.runs.lifecycle import RunIdentity, RunOutcome, RunProgress
from app.texts import Texts

#: What ended a run outside its graph, in the run's language (a quoted exception needs no texts).
Problem = Callable[[Texts], str] | str


def cancelled(t: Texts) -> str:
    return t.cancelled


def cloud_rejected(t: Texts) -> str:
    return t.cloud_rejected


def cancelled_leaving(control: AgentControl) -> Problem:
    """The user's cancel, and each agent it could not stop (its Job's deletion failed): the run's
    end must say that agent may still be running, since nobody else will."""
    if not control.not_stopped:
        return cancelled

    def said(t: Texts) -> str:
        left = [t.agent_not_stopped.format(job=f.job, error=f.error[:200]) for f in control.not_stopped]
        return " ".join([f"{t.cancelled}.", *left])

    return said


@dataclass
class ActiveRun:
    identity: RunIdentity
    task: asyncio.Task[RunOutcome] | None = None
    cancel_requested: bool = False
    outcome: RunOutcome | None = None
    """Set once the run ended, was recorded and freed its slot; /status answers from it meanwhile."""
    scope: LlmScope | None = None
    started_at: float = field(default_factory=time.monotonic)
    progress: RunProgress = field(default_factory=RunProgress)
    control: AgentControl = field(default_factory=AgentControl)
    """Read by the runners when the task is cancelled: stop the agent, or leave it for adoption."""
    journal: RunJournal | None = None
    """Writes the run record as the segment goes (creation, usage at node ends, outcome)."""
    language: str = ""
    """The run's language (what intake decides, known before it runs): texts said outside the graph."""
