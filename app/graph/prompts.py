"""Prompt builders. Each system prompt starts with a `### JERVIS NODE: <name>` line, which keeps
logs readable and lets the scripted test LLM answer per node. Prompts stay short: the local tier
may be a small model on a CPU."""

from __future__ import annotations

import json
from collections.abc import Iterable

from app.llm.provider import Message

_LANGUAGES = {"cs": "Czech", "en": "English", "sk": "Slovak", "de": "German"}


def language_rule(code: str) -> str:
    return f"Write every human-readable text in {_LANGUAGES.get(code, code)}."


def _system(node: str, body: str) -> Message:
    return {"role": "system", "content": f"### JERVIS NODE: {node}\n{body}"}


def _user(sections: Iterable[tuple[str, str | None]]) -> Message:
    text = "\n\n".join(f"## {title}\n{content}" for title, content in sections if content)
    return {"role": "user", "content": text}


INTAKE_SCHEMA = {
    "task_category": "advice|single_task|epic|generative",
    "task_action": "respond|code|tracker_ops|mixed",
    "external_refs": ["UFO-24"],
    "complexity": "simple|medium|complex|critical",
    "goal_clear": True,
    "clarification_questions": ["..."],
    "reasoning": "...",
}


def intake(*, query: str, context: str, recent: str, clarification: str | None, language: str) -> list[Message]:
    body = (
        "You classify a user's request for Jervis, an assistant that answers questions and runs "
        "coding agents. Categories: advice (answer only), single_task (one task: answer, code "
        "change, tracker operations or a mix), epic (many related tasks), generative (design "
        "something new from scratch). If the goal cannot be understood, set goal_clear=false and "
        f"ask short clarification questions. {language_rule(language)}\n"
        f"Reply with one JSON object with exactly these keys: {json.dumps(INTAKE_SCHEMA)}"
    )
    return [
        _system("intake", body),
        _user([("Request", query), ("Context", context), ("Recent conversation", recent),
               ("User's clarification", clarification)]),
    ]


def respond(*, query: str, context: str, language: str) -> list[Message]:
    body = (
        "You are Jervis, an AI assistant for software projects. Answer the user's request "
        f"directly and concretely from the context given. {language_rule(language)}"
    )
    return [_system("respond", body), _user([("Request", query), ("Context", context)])]


GOALS_SCHEMA = {
    "goals": [{"id": "g1", "title": "...", "description": "...", "complexity": "simple|medium|complex|critical",
               "dependencies": []}]
}
STEPS_SCHEMA = {
    "steps": [{"instructions": "...", "step_type": "code|respond|tracker", "files": ["path"],
               "tracker_operations": [{"op": "create|update|comment", "title": "...", "description": "...",
                                       "issue_key": None, "status": None, "comment": None}]}]
}


def plan_goals(*, query: str, context: str, decisions: str, language: str, node: str = "plan") -> list[Message]:
    body = (
        "Split the coding task into the smallest sensible list of goals. Each goal has an id, "
        "a title, a description, a complexity and the ids of goals it depends on. "
        f"{language_rule(language)}\nReply with JSON only: {json.dumps(GOALS_SCHEMA)}"
    )
    return [_system(node, body), _user([("Task", query), ("Context", context), ("Key decisions", decisions)])]


def plan_operations(*, query: str, action: str, context: str, decisions: str, language: str) -> list[Message]:
    kinds = "tracker" if action == "tracker_ops" else "respond, code or tracker"
    body = (
        f"Plan the steps to fulfil the request. Allowed step types: {kinds}. Tracker steps list "
        "their tracker_operations. Code steps give precise instructions for a coding agent and "
        f"the files involved. {language_rule(language)}\nReply with JSON only: {json.dumps(STEPS_SCHEMA)}"
    )
    return [_system("plan", body), _user([("Request", query), ("Context", context), ("Key decisions", decisions)])]


def plan_steps(*, goal: str, task: str, done_before: str, context: str, language: str) -> list[Message]:
    body = (
        "Write the execution steps for one goal of a coding task. Each code step holds complete, "
        "self-contained instructions for a coding agent working in the repository, and the files "
        f"it touches. {language_rule(language)}\nReply with JSON only: {json.dumps(STEPS_SCHEMA)}"
    )
    return [
        _system("plan_steps", body),
        _user([("Goal", goal), ("Whole task", task), ("Done in earlier goals", done_before), ("Context", context)]),
    ]


def execute_respond(*, instructions: str, task: str, context: str, language: str) -> list[Message]:
    body = f"You are Jervis. Carry out this step and answer with its result. {language_rule(language)}"
    return [_system("execute_step", body), _user([("Step", instructions), ("Task", task), ("Context", context)])]


def finalize(*, facts: str, language: str) -> list[Message]:
    body = (
        "Write the final report of an orchestration for the user in 3 to 5 sentences: what was "
        f"done, what changed, what is left. {language_rule(language)}"
    )
    return [_system("finalize", body), _user([("Facts", facts)])]


def design(*, query: str, context: str, language: str) -> list[Message]:
    body = (
        "Design a new piece of software from the request: split it into goals that can be built "
        f"one after another. {language_rule(language)}\nReply with JSON only: {json.dumps(GOALS_SCHEMA)}"
    )
    return [_system("design", body), _user([("Request", query), ("Context", context)])]
