"""What a cancelled run wants done with its running agent: stop it, or leave it for adoption.

A run task is cancelled for two different reasons. The user cancelled (or the step timed out):
the agent must not outlive its run, so runners kill the process / delete the Job. The service is
shutting down (SIGTERM) or lost its lease to another pod: the run is suspended, and the agent
keeps working so the pod that adopts the run re-attaches to it instead of starting it again.

The run manager puts one `AgentControl` into the context of each run task when it creates the
task and flips `detach` before cancelling it; runners read it in their cancel path. A context
variable (not a parameter) because the cancel reaches the runner through the whole graph.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field

from app.agents.base import StopFailure


@dataclass
class AgentControl:
    detach: bool = False
    """True: the run is being suspended; a cancelled runner leaves its agent running."""
    reason: str = ""
    """Why the run is suspended (for logs): "shutdown", "lease lost"."""
    cancelled: bool = False
    """The user cancelled the run: runners stop their agent at their next poll even if the task's
    cancellation has not reached them (the graph runs nodes in tasks of its own)."""
    not_stopped: list[StopFailure] = field(default_factory=list)
    """Agents a cancelled runner could not stop (their Jobs' deletion failed): the run's end says
    they may still be running. The cancel path has no step result to carry it."""

    def suspend(self, reason: str) -> None:
        self.detach = True
        self.reason = reason

    def cancel(self) -> None:
        self.cancelled = True


_control: ContextVar[AgentControl | None] = ContextVar("agent_control", default=None)


def use_control(control: AgentControl) -> None:
    """Set in the run task's own context (at its start), so every runner it awaits sees it."""
    _control.set(control)


def should_detach() -> bool:
    """Whether a runner being cancelled now must leave its agent running (see module doc)."""
    control = _control.get()
    return control is not None and control.detach


def report_not_stopped(failure: StopFailure) -> None:
    """A cancelled runner could not stop its agent: recorded for the run's end (no-op outside a run)."""
    control = _control.get()
    if control is not None:
        control.not_stopped.append(failure)


def cancel_requested() -> bool:
    """Whether the user cancelled the run this runner works for: stop the agent now."""
    control = _control.get()
    return control is not None and control.cancelled and not control.detach
