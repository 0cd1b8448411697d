"""finalize (spec §7.12): the final report.

A run that finished gets a report written by the LLM from the facts (or the facts themselves
when the LLM fails or the budget is spent: a finished run never becomes an error here), plus
the notices it must not leave out (`report.notice_lines`: skipped steps, warnings, the user's
conditions) and git, each once. A run that
gave up gets a deterministic report — the problem, what was finished and committed, what failed
and what is left — and its `error` says the same in a bounded form, because that is all Kotlin
shows of a failed run.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from app.graph import chat, prompts
from app.graph.rules import report
from app.graph.run_state import NodeRuntime, run_key, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Outcome, Setbacks, WorkDone
from app.llm.budget import BudgetExceededError
from app.llm.provider import LlmError
from app.llm.scope import current_scope
from app.texts import Texts, texts
from app.texts.language import detect_language

log = logging.getLogger(__name__)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s", re.MULTILINE)


def facts(state: OrchestratorState) -> str:
    lines = [f"Request: {task_of(state)['query']}"]
    for result in report.done_slots(state):
        files = ", ".join(result.get("changed_files", []))
        lines.append(f"- step {result['step_index'] + 1} [OK] {result['summary'][:300]}"
                     + (f" (files: {files})" if files else ""))
    for skipped in Setbacks.of(state).skipped or []:
        lines.append(f"- step {skipped['step_index'] + 1} [SKIPPED] {skipped['title']}: {skipped['reason'][:200]}")
    if failures := Setbacks.of(state).failures:
        lines.append(f"Failed attempts on the way: {len(failures)}")
    if Outcome.of(state).branch:
        lines.append(f"Branch: {state['branch']}")
    if count := chat.total_message_count(state):
        lines.append(f"Conversation so far: {count} messages")
    if decisions := chat.key_decisions(state, 5):
        lines.append("Key decisions: " + "; ".join(decisions))
    return "\n".join(lines)


def structured_summary(state: OrchestratorState, t: Texts) -> str:
    """The report without the LLM: every fact, no prose."""
    return " ".join(report.report_lines(state, t))


def facts_report(state: OrchestratorState, t: Texts) -> str:
    """A finished run's report from its facts alone (`REPORT_WRITER=facts`): what was done, in the
    steps' own words, then the structured lines and whether the tests passed."""
    lines = [report.done_work(state, t), structured_summary(state, t), report.tests_line(state, t)]
    return "\n".join(line for line in lines if line)


def with_usage(summary: str, t: Texts) -> str:
    """The report with the run's model usage appended, when it made model calls."""
    if (budget := current_scope().budget) is not None and budget.total().calls:
        return f"{summary}\n\n{t.report_usage.format(usage=budget.describe())}"
    return summary


GIT_NOTES = ("commit_rejected", "push_rejected", "committed", "pushed", "not_a_repo", "push_failed")


def git_note(state: OrchestratorState, t: Texts) -> str:
    outcome = Outcome.of(state).git_outcome or ""
    if outcome not in GIT_NOTES:
        return ""
    return str(getattr(t, f"git_{outcome}")).format(branch=Outcome.of(state).branch or "-")


async def finalize(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    language = run_language(state, ctx.settings)
    t = texts(language)
    halt = Setbacks.of(state).halt
    problem = halt["message"] if halt else Outcome.of(state).error
    files = report.changed_files(state)
    updates: dict[str, Any] = {"artifacts": files}
    if problem:
        lines = [t.report_problem.format(problem=problem), *report.report_lines(state, t), git_note(state, t)]
        summary = "\n".join(line for line in lines if line)
        updates |= {"final_result": summary, "error": report.error_text(problem, state, t)}
    else:
        summary = answers = Outcome.of(state).final_result or ""
        worked = not summary or (WorkDone.of(state).step_results and any(r.get("step_type") != "respond"
                                                                   for r in state["step_results"]))
        if worked:  # the answer steps' full answers (a mixed plan) come first, then the report of the work
            written = (await _written(state, runtime, t, language) if ctx.settings.report_writer == "model"
                       else with_usage(facts_report(state, t), t))  # REPORT_WRITER=facts: no model call
            summary = f"{answers}\n\n{written}" if answers else written
        else:  # an answer: the notices the structured report would carry are added here
            summary = "\n\n".join([summary, *report.notice_lines(state, t)])
        if note := git_note(state, t):
            summary = f"{summary}\n\n{note}"
        updates["final_result"] = summary
    ctx.context_store.save_nowait(run_key(state), "task", "final", summary[:500],
                                  {"summary": summary, "branch": Outcome.of(state).branch,
                                   "artifacts": files, "error": updates.get("error")}, chat_id=task_of(state)["id"])
    return updates


def usable_report(text: str, language: str) -> bool:
    """Plain sentences in the run's language: a small model answers a Czech run in English and
    with Markdown headings (seen on the embedded model), which the structured report never does."""
    return detect_language(text, default=language) == language and not _HEADING.search(text)


async def _written(state: OrchestratorState, runtime: NodeRuntime, t: Texts, language: str) -> str:
    """The LLM's report with the notices it must not leave out, or the structured one (which has
    them); the budget running out here is no failure."""
    ctx = runtime.context
    note = ""
    try:
        written = (await ctx.llm.complete(prompts.finalize(facts=facts(state), language=language),
                                          max_tokens=prompts.Cap.REPORT)).strip()
    except LlmError as exc:
        log.warning("final report by LLM failed, using the structured one: %s", exc)
        written = ""
    except BudgetExceededError as exc:
        log.warning("budget exhausted at the final report, using the structured one: %s", exc)
        written, note = "", t.report_budget_stop.format(reason=exc)
    if written and not usable_report(written, language):
        log.warning("final report by LLM not in %s plain sentences, using the structured one: %.200r",
                    language, written)
        written = ""
    summary = "\n\n".join([written, *report.notice_lines(state, t)]) if written else structured_summary(state, t)
    if note:
        summary = f"{summary}\n\n{note}"
    return with_usage(summary, t)
