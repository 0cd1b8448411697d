"""ask_user: a failed step the run cannot settle alone goes to the user as a `clarify` interrupt
(Kotlin shows the question as it is), and the free-text answer becomes retry-with-this-hint,
skip, replan or stop. Asked at most RECOVERY_MAX_QUESTIONS times per run, and once per step
whose attempts are used up: `reflect` turns the next such failure into a stop."""

from __future__ import annotations

from typing import Any

from langgraph.types import interrupt

from app.graph.decisions import apply_decision
from app.graph.rules import failure_recovery
from app.graph.rules.approval import answer_text
from app.graph.run_state import NodeRuntime, current_step, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Attempts
from app.graph.user_answers import read_recovery_choice
from app.schemas.domain import CodingStep, Recovery, RecoveryAction
from app.texts import texts
from app.texts.clip import clip


def question(decision: Recovery, step: CodingStep, language: str, *, at_cap: bool) -> str:
    """The failure, why the user is asked (used-up attempts), and the answers the run understands."""
    t = texts(language)
    lines = [t.recovery_question.format(step=decision.step_index + 1, goal=decision.goal_index + 1,
                                        title=clip(step.instructions, 80), attempt=decision.attempt,
                                        failure=clip(" ".join(decision.failure.split()), 400))]
    if decision.root_cause:
        lines.append(t.recovery_cause.format(cause=clip(decision.root_cause, 300)))
    if at_cap:
        lines.append(t.recovery_cap_attempts.format(attempts=decision.attempt))
    lines.append(t.recovery_options)
    return "\n".join(lines)


async def ask_user(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    asked = Recovery.model_validate(state["recovery"])
    step = CodingStep.model_validate(current_step(state))
    language = run_language(state, ctx.settings)
    caps = failure_recovery.Caps.from_settings(ctx.settings)
    at_cap = asked.attempt >= caps.max_attempts + Attempts.of(state).extra_attempts
    text = question(asked, step, language, at_cap=at_cap)
    answer = answer_text(interrupt({
        "type": "clarification", "action": "clarify", "description": text, "task_id": task_of(state)["id"],
        "questions": [text], "failure": clip(asked.failure, 1000),
        "options": ["retry", "skip_step", "replanning", "stop"],
    }))
    action, hint = await read_recovery_choice(ctx.llm, answer, question=text)
    updates: dict[str, Any] = {"questions": Attempts.of(state).questions + 1,
                               "cap_asked": Attempts.of(state).cap_asked or at_cap}
    if action == RecoveryAction.REPLANNING and Attempts.of(state).replans >= caps.max_replans:
        action, hint = RecoveryAction.STOP, ""  # the user's replan cannot go past the cap either
    if action in failure_recovery.RETRIES and at_cap:
        updates["extra_attempts"] = Attempts.of(state).extra_attempts + 1  # the user grants one more
    decided = Recovery.model_validate(asked.model_dump() | {  # validated: the action is an enum again
        "action": action, "hint": hint or asked.hint, "source": "user", "note": f"user: {clip(answer, 200)}"})
    return updates | await apply_decision(state, runtime, decided)
