"""What the finished steps before the current one left behind, read in one walk over the run's
results (the last success of every step, `done_slots`): the next code step is told what earlier
steps changed and found, an answer step what they produced."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.graph.rules.report import done_slots
from app.graph.state_access import WorkDone
from app.texts.clip import clip

FINDINGS_CHARS = 1500
EARLIER_CHARS = 1500


@dataclass(frozen=True)
class EarlierSteps:
    work: str
    """Earlier goals and this goal's finished steps, one line each: what they did and which files they changed
    (the agents' own output stays out of the next agent's prompt)."""
    findings: str
    """What this goal's inspect / analyse steps found, for the steps after them."""
    results: str
    """What every finished step before this one produced (answers, findings, summaries), for an answer step that
    builds on them ("summarise what the analysis found")."""


def earlier_steps(state: Mapping[str, Any], goal_index: int, step_index: int) -> EarlierSteps:
    done = done_slots(state)
    before_in_goal = [r for r in done if r.get("goal_index", 0) == goal_index and r["step_index"] < step_index]
    work = [f"- goal {s['title']}: " + (", ".join(s.get("changed_files", [])) or "no files changed")
            for s in WorkDone.of(state).goal_summaries]
    work += [f"- step {r['step_index'] + 1}: {clip(str(r.get('title', '')), 150)} "
             f"({', '.join(r.get('changed_files', [])) or 'no files changed'})" for r in before_in_goal]
    findings = [f"- step {r['step_index'] + 1}: {r['findings']}"
                for r in sorted(before_in_goal, key=lambda r: r["step_index"]) if r.get("findings")]
    results = [f"- {clip(str(r.get('title', '')), 100)}: {clip(str(r.get('findings') or r.get('summary') or ''), 600)}"
               for r in sorted(done, key=lambda r: (r.get("goal_index", 0), r["step_index"]))
               if (r.get("goal_index", 0), r["step_index"]) < (goal_index, step_index)]
    return EarlierSteps(work=clip("\n".join(work), EARLIER_CHARS), findings=clip("\n".join(findings), FINDINGS_CHARS),
                        results=clip("\n".join(results), EARLIER_CHARS))
