"""What ends a run outside its graph (app/runs/active.py): a cancel that left an agent running says so."""

from __future__ import annotations

from app.agents.base import StopFailure
from app.agents.control import AgentControl
from app.graph.rules import report
from app.runs.active import cancelled, cancelled_leaving
from app.texts import CS, EN


def test_a_cancel_that_stopped_every_agent_is_the_plain_cancel() -> None:
    assert cancelled_leaving(AgentControl()) is cancelled


def test_a_cancel_that_could_not_delete_an_agents_job_says_it_may_still_run() -> None:
    control = AgentControl()
    control.cancel()
    control.not_stopped.append(StopFailure(job="jervis-t1-g0-s0-a1-x", error="deleting Job failed: 403 Forbidden"))

    problem = cancelled_leaving(control)

    assert not isinstance(problem, str)
    assert problem(EN) == ("Orchestration cancelled by the user. The agent's Job jervis-t1-g0-s0-a1-x could not be "
                           "deleted (deleting Job failed: 403 Forbidden): it may still be running until its deadline.")
    assert problem(CS).startswith("Orchestrace zrušena uživatelem. Job agenta jervis-t1-g0-s0-a1-x se nepodařilo "
                                  "smazat")
    # the run's error: the problem first, then what was done (nothing here)
    assert report.error_text(problem(EN), {}, EN) == problem(EN)
