"""Classifying a request (spec §7.1): the model's answer, held to deterministic rules.

An answer that stays invalid after the repair round falls back to the rules of
`app/graph/rules/intent.py` instead of silently becoming advice; an imperative code request on a
project with a workspace is never treated as a mere question, and a plain question is never
turned into work; only issue keys that really occur in the request or the conversation are kept.
Used by the intake node and by `bench/intake.py`.
"""

from __future__ import annotations

import logging
import re

from app.graph import prompts
from app.graph.rules import intent
from app.graph.rules.request_scope import RequestScope
from app.llm.provider import Llm, LlmJsonError
from app.schemas.domain import Classification, Complexity, TaskAction, TaskCategory
from app.texts import texts

log = logging.getLogger(__name__)

#: How a classification the deterministic rules overruled starts its reasoning.
RULE = "rule:"
#: What an external reference looks like: an issue key (ABC-12), a number (#12) or a link.
REF_SHAPE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9_]*-\d+|#\d+|https?://\S+)$")
#: An issue key as people write it in a request: ABC-12.
_ISSUE_KEY = re.compile(r"\b[A-Z][A-Z0-9_]{1,15}-\d+\b")
#: More target files than this and a request is not certainly one task.
RULE_MAX_TARGETS = 2


def certain_classification(query: str, scope: RequestScope, *, workspace: bool) -> Classification | None:
    """The classification when the rules are certain, else None (the model decides):
    - a plain question (a question word first, a question mark last, no code verb) is advice;
    - an imperative code request ("Add …", "Oprav …") naming a file or a function, on a project
      with a workspace, is one code task (simple when it is about one file).
    Each saves the classification call (35-60 s of the embedded model)."""
    if intent.is_plain_question(query):
        return Classification(task_category=TaskCategory.ADVICE, task_action=TaskAction.RESPOND,
                              complexity=Complexity.SIMPLE, reasoning=f"{RULE} a plain question",
                              external_refs=_ISSUE_KEY.findall(query)[:5])
    if (workspace and intent.asks_for_code_change(query) and (scope.targets or scope.functions)
            and len(scope.targets) <= RULE_MAX_TARGETS):
        return Classification(task_category=TaskCategory.SINGLE_TASK, task_action=TaskAction.CODE,
                              complexity=Complexity.SIMPLE if len(scope.targets) <= 1 else Complexity.MEDIUM,
                              reasoning=f"{RULE} a code request naming {', '.join(scope.targets or scope.functions)}",
                              external_refs=list(dict.fromkeys(_ISSUE_KEY.findall(query)))[:5])
    return None


def fallback_classification(query: str, workspace: bool) -> Classification:
    """When the model gave no usable answer: a code request goes to planning, anything else is
    answered (and the report says the classification fell back)."""
    code = workspace and intent.starts_with_code_verb(query) and not intent.looks_like_question(query)
    return Classification(
        task_category=TaskCategory.SINGLE_TASK if code else TaskCategory.ADVICE,
        task_action=TaskAction.CODE if code else TaskAction.RESPOND,
        complexity=Complexity.MEDIUM if code else Complexity.SIMPLE,
        reasoning="deterministic fallback: the model's classification could not be read",
    )


def literal_refs(refs: list[str], *texts: str) -> list[str]:
    """Issue keys the model returned that really occur in the request or the conversation and look
    like references (a small model also lists file names), once each, case-insensitively."""
    haystack = "\n".join(texts).lower()
    kept: dict[str, str] = {}
    for ref in (r.strip() for r in refs):
        if REF_SHAPE.match(ref) and ref.lower() in haystack:
            kept.setdefault(ref.lower(), ref)
    return list(kept.values())[:10]


async def classify(llm: Llm, *, query: str, context: str, recent: str, clarification: str | None, language: str,
                   workspace: bool) -> tuple[Classification, list[str]]:
    """The request's classification and the warnings the report must carry."""
    messages = prompts.intake(query=query, context=context, recent=recent, clarification=clarification,
                              language=language)
    warnings: list[str] = []
    try:
        result = await llm.complete_json(messages, Classification, max_tokens=prompts.Cap.CLASSIFY)
    except LlmJsonError as exc:
        log.warning("intake: no usable classification (%s); using the deterministic rules", exc)
        result = fallback_classification(query, workspace)
        warnings.append(texts(language).warning_classification_fallback.format(
            category=result.task_category, action=result.task_action, error=exc))
    if (result.task_category == TaskCategory.ADVICE and workspace and intent.asks_for_code_change(query)
            and not intent.looks_like_question(query)):
        log.info("intake: the model said advice for an imperative code request; planning it as code")
        result.reasoning = f"{RULE} a code request (the model said advice: {result.reasoning})"
        result.task_category, result.task_action = TaskCategory.SINGLE_TASK, TaskAction.CODE
    elif result.task_category != TaskCategory.ADVICE and intent.is_plain_question(query):
        log.info("intake: the model said %s for a plain question; answering it", result.task_category)
        result.reasoning = f"{RULE} a question (the model said {result.task_category}: {result.reasoning})"
        result.task_category, result.task_action = TaskCategory.ADVICE, TaskAction.RESPOND
    result.external_refs = literal_refs(result.external_refs, query, recent, clarification or "")
    return result, warnings
