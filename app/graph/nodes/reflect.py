"""reflect (spec 000, ReflectionEngine): a step failed — why, and what now?

From the `REFLECTION_FROM_ATTEMPT`-th failure of a step on, the LLM reads the step, the failure
(failing tests, review issues, forbidden files), the agent's summary and last output, the step's
diff and the attempt number, and answers with spec 000's keys; earlier failures are retried with
the failure itself as feedback, without that call (the agent sees the failing tests' output, as
a bare agent's test loop would show it). `app/graph/rules/failure_recovery.py` holds every decision to the caps
and notices a failure that repeats an earlier attempt's exactly; without a readable answer it falls
back (retry with the raw failure, then ask the user). Skipping, replanning and stopping undo the
failed step's changes here, so a later commit holds only finished work.
"""

from __future__ import annotations

import logging
from typing import Any

from app.graph import prompts
from app.graph.decisions import apply_decision
from app.graph.rules import failure_recovery, step_changes
from app.graph.run_state import NodeRuntime, current_step, emit, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Attempts, Position, Setbacks
from app.llm.budget import BudgetExceededError
from app.llm.provider import LlmError
from app.persistence.context_store import ContextStore
from app.schemas.domain import CheckStatus, CodingStep, Evaluation, Reflection
from app.texts import texts
from app.texts.clip import clip

log = logging.getLogger(__name__)

OUTPUT_TAIL_CHARS = 1000
#: What the reflection sees of the failure (its end: a test run's failures and summary) and of the diff.
FAILURE_CHARS = 1500
DIFF_CHARS = 2000


async def agent_output(store: ContextStore, task_id: str, goal_index: int, step_index: int) -> str:
    """The failed attempt's last output (execute_step stored it); nothing when the store is down."""
    try:
        entry = await store.get(task_id, "agent_result", ContextStore.step_key(goal_index, step_index))
    except Exception:
        log.warning("the agent's output is not available for the reflection", exc_info=True)
        return ""
    return str((entry.detail if entry else {}).get("log_tail", ""))[-OUTPUT_TAIL_CHARS:]


def history(state: OrchestratorState, limit: int = 3) -> str:
    return "\n".join(f"- step {f['goal_index'] + 1}.{f['step_index'] + 1} attempt {f['attempt']}: "
                     f"{clip(f['reason'], 150)} → {f['action']}" for f in (Setbacks.of(state).failures or [])[-limit:])


async def reflect(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    step = CodingStep.model_validate(current_step(state))
    last = state["step_results"][-1]
    evaluation = Evaluation.model_validate(Setbacks.of(state).evaluation or {"acceptable": False})
    attempt = Attempts.of(state).attempt
    goal_index = Position.of(state).current_goal_index
    caps = failure_recovery.Caps.from_settings(ctx.settings)
    language = run_language(state, ctx.settings)
    t = texts(language)
    failure = evaluation.feedback or last.get("summary", "") or t.step_failed
    task = task_of(state)
    workspace = ctx.workspaces.resolve(task["workspace_path"])
    diff = await step_changes.diff(ctx.snapshots, workspace, last["base_tree"]) if last.get("base_tree") else ""
    signature = failure_recovery.failure_signature(failure, diff)
    repeats = sum(1 for f in Setbacks.of(state).failures or [] if f.get("signature") == signature
                  and (f["goal_index"], f["step_index"]) == (goal_index, step.index))
    reflected = attempt >= ctx.settings.reflection_from_attempt
    suggestion: Reflection | None = None
    if reflected:
        output = await agent_output(ctx.context_store, task["id"], goal_index, step.index) \
            if last.get("step_type") == "code" else ""
        try:
            suggestion = await ctx.llm.complete_json(prompts.reflect(
                step=clip(step.instructions, 1500), attempt=attempt, max_attempts=caps.max_attempts,
                failure=tail(failure, FAILURE_CHARS), agent_summary=clip(last.get("summary", ""), 500),
                output_tail=output, diff=clip(diff, DIFF_CHARS), history=history(state), critical=step.critical,
                language=language), Reflection, max_tokens=prompts.Cap.REFLECT)
        except LlmError as exc:
            log.warning("reflection without an LLM verdict (%s): deterministic fallback", exc)
        except BudgetExceededError as exc:  # no more LLM calls: stop, with the failed step undone
            await step_changes.discard(ctx.snapshots, workspace, last.get("base_tree"))
            return {"halt": {"kind": "budget", "message": t.halt_budget.format(reason=exc)}}
    facts = failure_recovery.FailedStep(goal_index=goal_index, step_index=step.index, attempt=attempt,
                                critical=step.critical, extra_attempts=Attempts.of(state).extra_attempts,
                                cap_asked=Attempts.of(state).cap_asked, replans=Attempts.of(state).replans,
                                questions=Attempts.of(state).questions, repeats=repeats)
    failed = {c.name for c in evaluation.checks if c.status in (CheckStatus.FAILED, CheckStatus.BLOCKED)}
    decision = failure_recovery.decide(suggestion, facts, caps, failure=failure, reflected=reflected,
                               repeat_hint=t.recovery_repeat_hint, tests_only=failed == {"tests"})
    emit({"type": "reflection", **decision.model_dump(mode="json", exclude={"failure"}),
          "failure": clip(failure, 500)})
    log.info("reflection on step %d.%d attempt %d: %s (%s%s)", goal_index + 1, step.index + 1, attempt,
             decision.action.value, decision.source, f"; {decision.note}" if decision.note else "")
    return await apply_decision(state, runtime, decision, signature=signature)


def tail(text: str, limit: int) -> str:
    """The last `limit` characters, marked when cut (a test run's verdict is at its end)."""
    return text if len(text) <= limit else "…" + text[-(limit - 1):]
