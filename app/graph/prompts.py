"""Prompt builders. Each system prompt starts with a `### JERVIS NODE: <name>` line, which keeps
logs readable and lets the scripted test LLM answer per node. Prompts stay short: the local tier
may be a small model on a CPU."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from app.graph.state_parts import GoalDict, Rules, TaskDict
from app.llm.provider import Message
from app.schemas.domain import CodingStep, Recovery
from app.texts.clip import clip

_LANGUAGES = {"cs": "Czech", "en": "English", "sk": "Slovak", "de": "German"}


#: Workspace files a step planner sees at most (the rest is counted).
PLAN_FILES_SHOWN = 60


class Cap:
    """Output tokens per call purpose: room for a good answer, no room for a loop. What the
    embedded 1.5B model writes when it behaves, measured: a classification 60-120 tokens, a
    one-step plan 80-200, a reflection 80-150, a review 40-120, an interpretation 20-60; with
    no cap a looping step plan ran to the server's 4,095 (347 s). The JSON schemas bound each
    string and list as well (`app/schemas/domain.py`), so a grammar stops a loop earlier still."""

    CLASSIFY = 300
    GOALS = 700
    DESIGN = 1100
    STEPS = 800
    REFLECT = 400
    REVIEW = 400
    INTERPRET = 200
    REPORT = 300
    ANSWER = 1500
    """A free-text answer to the user's question (respond, answer steps)."""


def language_rule(code: str) -> str:
    return f"Write every human-readable text in {_LANGUAGES.get(code, code)}."


def _system(node: str, body: str) -> Message:
    return {"role": "system", "content": f"### JERVIS NODE: {node}\n{body}"}


def _user(sections: Iterable[tuple[str, str | None]]) -> Message:
    text = "\n\n".join(f"## {title}\n{content}" for title, content in sections if content)
    return {"role": "user", "content": text}


# Schemas a small model sees: placeholders in angle brackets, never a value it could copy.
INTAKE_SCHEMA = (
    '{"task_category": "<advice|single_task|epic|generative>", "task_action": "<respond|code|tracker_ops|mixed>", '
    '"external_refs": ["<issue key written in the request>"], "complexity": "<simple|medium|complex|critical>", '
    '"goal_clear": <true|false>, "clarification_questions": ["<question>"], "reasoning": "<one sentence>"}'
)


def _classified(category: str, action: str, complexity: str, reasoning: str, refs: tuple[str, ...] = ()) -> str:
    return json.dumps({"task_category": category, "task_action": action, "external_refs": list(refs),
                       "complexity": complexity, "goal_clear": True, "clarification_questions": [],
                       "reasoning": reasoning})


#: Few-shot turns, two code changes and two questions, English and Czech: with them a 1.5B model
#: classifies plain code requests correctly (without them it answers "advice").
INTAKE_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("Add a multiply(a, b) function to math_utils.py", _classified("single_task", "code", "simple",
                                                                  "asks to change the code")),
    ("Oprav chybu v přihlašování popsanou v ABC-12", _classified("single_task", "code", "medium",
                                                               "žádá opravu kódu", ("ABC-12",))),
    ("What does the login endpoint return?", _classified("advice", "respond", "simple", "a question")),
    ("Jak funguje cache v tomto projektu?", _classified("advice", "respond", "simple", "otázka")),
)


def intake(*, query: str, context: str, recent: str, clarification: str | None, language: str) -> list[Message]:
    body = (
        "You classify a user's request for Jervis, an assistant that answers questions and runs "
        "coding agents on the user's project. Categories: advice (a question or discussion: "
        "task_action respond), single_task (one piece of work: a code change = code, tracker "
        "operations = tracker_ops, or both = mixed), epic (many related tasks), generative (design "
        "and build something new from scratch). A request to add, fix, implement, change, refactor, "
        "rename or remove something in the code is single_task with task_action code, however short; a "
        "question about the code (what, how, why) is advice with task_action respond. "
        "external_refs: only issue keys that are written in the request, usually none. If the goal "
        "cannot be understood, set goal_clear to false and ask short clarification questions. "
        f"{language_rule(language)}\nReply with one JSON object with exactly these keys: {INTAKE_SCHEMA}"
    )
    examples: list[Message] = []
    for request, answer in INTAKE_EXAMPLES:
        examples += [{"role": "user", "content": f"## Request\n{request}"}, {"role": "assistant", "content": answer}]
    return [
        _system("intake", body),
        *examples,
        _user([("Request", query), ("Context", context), ("Recent conversation", recent),
               ("User's clarification", clarification)]),
    ]


def respond(*, query: str, context: str, language: str) -> list[Message]:
    body = (
        "You are Jervis, an AI assistant for software projects. Answer the user's request "
        f"directly and concretely from the context given. {language_rule(language)}"
    )
    return [_system("respond", body), _user([("Request", query), ("Context", context)])]


GOALS_SCHEMA = (
    '{"goals": [{"id": "<short id>", "title": "<title>", "description": "<what the goal delivers>", '
    '"complexity": "<simple|medium|complex|critical>", "dependencies": ["<ids of goals it needs first>"]}]}'
)
STEPS_SCHEMA = (
    '{"steps": [{"instructions": "<complete instructions for this step>", "step_type": "<code|respond|tracker>", '
    '"files": ["<path>"], "expects_changes": <true|false>, "critical": <true|false>, '
    '"tracker_operations": [{"op": "<create|update|comment>", "title": "<title>", "description": "<text>", '
    '"issue_key": "<key or null>", "status": "<status or null>", "comment": "<text or null>"}]}]}'
)
STEP_FIELDS_GUIDE = (
    "expects_changes is false only for a step that inspects, analyses or runs something without "
    "changing files (what it finds is passed to the next steps); otherwise true. critical is false "
    "only for a step the task can do without (it may be skipped if it keeps failing); otherwise true. "
    "tracker_operations stays an empty list except in tracker steps. The orchestrator runs the tests, "
    "reviews the change and commits after the user approves: plan no step that only tests, commits or "
    "pushes. A small change (one function, one file) is one step."
)


def plan_goals(*, query: str, context: str, decisions: str, language: str, node: str = "plan") -> list[Message]:
    body = (
        "Split the coding task into the smallest sensible list of goals. Each goal has an id, "
        "a title, a description, a complexity and the ids of goals it depends on. "
        f"{language_rule(language)}\nReply with JSON only: {GOALS_SCHEMA}"
    )
    return [_system(node, body), _user([("Task", query), ("Context", context), ("Key decisions", decisions)])]


def plan_operations(*, query: str, action: str, context: str, decisions: str, language: str) -> list[Message]:
    kinds = "tracker" if action == "tracker_ops" else "respond, code or tracker"
    body = (
        f"Plan the steps to fulfil the request. Allowed step types: {kinds}. Tracker steps list "
        "their tracker_operations. Code steps give precise instructions for a coding agent and "
        f"the files involved. {STEP_FIELDS_GUIDE} {language_rule(language)}\nReply with JSON only: {STEPS_SCHEMA}"
    )
    return [_system("plan", body), _user([("Request", query), ("Context", context), ("Key decisions", decisions)])]


CODE_STEPS_SCHEMA = (
    '{"steps": [{"instructions": "<complete instructions for this step>", "files": ["<path>"], '
    '"expects_changes": <true|false>, "critical": <true|false>}]}'
)


def plan_steps(*, goal: str, task: str | None, done_before: str, context: str, language: str,
               others: str = "", files: Sequence[str] = ()) -> list[Message]:
    """The steps of a goal (an epic's), or of a whole single task (`task` None: the goal is the
    request). Asked for few, self-contained steps that keep the user's exact names and messages;
    `others` are the plan's other goals, which the steps must leave to them. `files`: the
    workspace's source files, the first `PLAN_FILES_SHOWN` of them shown (a small model that sees
    none invents a project: `src/calculator.js` for a workspace holding `calc.py`). Test files are
    left out: shown, the same model plans a step that edits the tests, which integrity refuses."""
    body = (
        "Write the execution steps of a coding task for a coding agent working in the repository. "
        "Usually one step is enough: split only work on separate parts of the code. Each step's "
        "instructions are complete and self-contained and keep the request's names, signatures and "
        f"messages exactly; list the files it changes. {STEP_FIELDS_GUIDE} {language_rule(language)}\n"
        f"Reply with JSON only: {CODE_STEPS_SCHEMA}"
    )
    return [
        _system("plan_steps", body),
        _user([("Goal" if task else "Task", goal), ("Whole task", task), ("Done in earlier goals", done_before),
               ("Other goals (planned separately: not part of this goal's steps)", others),
               ("Existing files (use these paths; change only what the task needs)", _listing(files)),
               ("Context", context)]),
    ]


def _listing(files: Sequence[str]) -> str:
    shown = [f"- {path}" for path in files[:PLAN_FILES_SHOWN]]
    if len(files) > PLAN_FILES_SHOWN:
        shown.append(f"- … ({len(files) - PLAN_FILES_SHOWN} more)")
    return "\n".join(shown)


def execute_respond(*, instructions: str, task: str, context: str, language: str) -> list[Message]:
    body = f"You are Jervis. Carry out this step and answer with its result. {language_rule(language)}"
    return [_system("execute_step", body), _user([("Step", instructions), ("Task", task), ("Context", context)])]


def finalize(*, facts: str, language: str) -> list[Message]:
    body = (
        "Write the final report of an orchestration for the user in 3 to 5 plain sentences, without "
        "headings or lists: what was done, what changed, what is left. State only what the facts say: "
        f"never claim a push, a test run or a review the facts do not mention. {language_rule(language)}"
    )
    return [_system("finalize", body), _user([("Facts", facts)])]


DESIGN_SCHEMA = (
    '{"summary": "<the design in 1-2 sentences>", "context": "<what exists and what is asked>", '
    '"decisions": [{"decision": "<a choice made>", "reason": "<why>"}], "interfaces": ["<a module, '
    'function or endpoint and its signature>"], ' + GOALS_SCHEMA[1:]
)


def design(*, query: str, context: str, language: str, earlier: str = "", objection: str = "") -> list[Message]:
    """The design document's content and its goals; a revision gets the earlier design and the user's objection."""
    body = (
        "Design a new piece of software from the request: the context, the decisions with their reasons, "
        "the interfaces, and goals that build it (a goal lists the goals it needs first; goals that do not "
        f"need each other can be built at the same time). {language_rule(language)}\n"
        f"Reply with JSON only: {DESIGN_SCHEMA}"
    )
    revision = [("Earlier design", earlier), ("The user refused it because", objection)] if objection else []
    return [_system("design", body), _user([("Request", query), ("Context", context), *revision])]


REFLECTION_SCHEMA = (
    '{"analysis": "<what happened, 1-2 sentences>", "root_cause": "<the real cause, not the symptom>", '
    '"suggested_action": "<retry|retry_modified|replanning|ask_user|skip_step>", "confidence": <0.0-1.0>, '
    '"modification_hint": "<how the next attempt should differ, or empty>"}'
)


def reflect(*, step: str, attempt: int, max_attempts: int, failure: str, agent_summary: str, output_tail: str,
            diff: str, history: str, critical: bool, language: str) -> list[Message]:
    body = (
        "A step of a coding task failed. Find the root cause and choose what to do next: retry (a "
        "passing problem: the same step again), retry_modified (the same step, done differently: say "
        "how in modification_hint), replanning (the plan itself is wrong), ask_user (only the user can "
        "decide or give what is missing), skip_step (the task can succeed without this step"
        + ("" if not critical else "; this step is critical, so not this") + "). "
        f"{language_rule(language)}\nReply with JSON only: {REFLECTION_SCHEMA}"
    )
    return [
        _system("reflect", body),
        _user([("Step", step), ("Attempt", f"{attempt} of {max_attempts}"), ("Failure", failure),
               ("Agent's summary", agent_summary), ("Agent's last output", output_tail), ("The step's change", diff),
               ("Earlier failures of this run", history)]),
    ]


REVIEW_SCHEMA = '{"approved": <true|false>, "issues": ["<problem>"], "summary": "<one sentence>"}'


def review(*, goal: str, step: str, diff: str, language: str) -> list[Message]:
    body = (
        "Review a code change a coding agent made for one step of a task. Approve it when it does what "
        "the step asks without an obvious bug. Reject it only for a real problem: wrong behaviour, a "
        "missing part of the step, broken code, or changes unrelated to the step; list each problem in "
        f"issues. {language_rule(language)}\nReply with JSON only: {REVIEW_SCHEMA}"
    )
    return [_system("review", body), _user([("Goal", goal), ("Step", step), ("Diff", diff)])]


def review_epic(*, request: str, goals: str, tests: str, stat: str, diff: str, language: str) -> list[Message]:
    body = (
        "Review the whole change a coding task made, against every goal of its plan. Approve it when "
        "every goal is done and the parts fit together. Reject it only for a real problem: a goal not "
        "done, parts that do not fit together, broken code; list each problem in issues. "
        f"{language_rule(language)}\nReply with JSON only: {REVIEW_SCHEMA}"
    )
    return [_system("review_epic", body), _user([("Request", request), ("Goals", goals), ("Tests", tests),
                                                 ("Changed files", stat), ("Diff", diff)])]


def replan_steps(*, goal: str, task: str, done: str, failure: str, context: str, language: str) -> list[Message]:
    body = (
        "The plan of one goal of a coding task failed. Write new steps for the rest of the goal only: "
        "the steps already done stay done and must not be repeated. Avoid what failed. "
        f"{STEP_FIELDS_GUIDE} {language_rule(language)}\nReply with JSON only: {STEPS_SCHEMA}"
    )
    return [
        _system("replan", body),
        _user([("Goal", goal), ("Whole task", task), ("Steps already done", done), ("What failed", failure),
               ("Context", context)]),
    ]


def replan_goals(*, task: str, finished: str, failure: str, context: str, language: str) -> list[Message]:
    body = (
        "Plan the remaining goals of a task again. Finished goals stay finished and must not be "
        "repeated; the new goals cover only what is left, avoiding what failed or what the user "
        f"refused. {language_rule(language)}\nReply with JSON only: {GOALS_SCHEMA}"
    )
    return [
        _system("replan", body),
        _user([("Task", task), ("Finished goals", finished), ("Why the plan changes", failure), ("Context", context)]),
    ]


APPROVAL_SCHEMA = '{"approved": <true|false>, "modification": "<condition or change they attach, or null>", ' \
                  '"reason": "<why they refuse, or null>"}'


def interpret_approval(*, question: str, answer: str) -> list[Message]:
    body = (
        "The user answered an approval question. Decide whether they approve, and copy any condition "
        "or change they attach (modification) or their reason for refusing (reason), in their own words."
        f"\nReply with JSON only: {APPROVAL_SCHEMA}"
    )
    return [_system("interpret_approval", body), _user([("Question", question), ("Answer", answer)])]


RECOVERY_ANSWER_SCHEMA = '{"suggested_action": "<retry|skip_step|replanning|stop>", "hint": "<their advice, or empty>"}'


def interpret_recovery_answer(*, question: str, answer: str) -> list[Message]:
    body = (
        "A step failed and the user was asked what to do. Read their answer: retry (try again, "
        "possibly following their advice), skip_step, replanning or stop; copy their advice for a "
        f"retry into hint.\nReply with JSON only: {RECOVERY_ANSWER_SCHEMA}"
    )
    return [_system("interpret_answer", body), _user([("Question", question), ("Answer", answer)])]


# --- a coding agent's instructions (execute_step) ---------------------------------------------

#: Measured with Aider on the embedded model (bench/exercises, leap, pangram, bob): without it the model
#: explains its change, repeats the tests and shows usage (298-569 output tokens, 112-161 s at 7 tokens/s);
#: with it 58-127 tokens (38-50 s), and pangram passed where the long answer broke the file.
BRIEF_REPLY = ("Reply with the changed files only: no explanation, no usage examples, no tests the task does not "
               "ask for.")


def render_instructions(step: CodingStep, goal: GoalDict, task: TaskDict, rules: Rules, *, single_goal: bool,
                        earlier: str = "", findings: str = "", feedback: str = "", conversation: str = "",
                        tests: list[str] | None = None, test_command: str | None = None, tests_readable: bool = False,
                        conditions: list[str] | None = None) -> str:
    """The agent's instructions: the step, its files, the tests that judge it and the rules once,
    then what it needs to know of the rest (the whole request only when the step is a part of it,
    earlier steps summarised, the conversation before the request), and last what went wrong in
    the previous attempt. The stable part comes first, so a retry's prompt starts like the first
    attempt's and a local model server reuses its cached prefix."""
    files = "\n".join(f"- {f}" for f in step.files) or "- (decide yourself)"
    forbidden = ", ".join(rules.get("forbidden_files", [])) or "-"
    report = ("- This step inspects or runs something: change no file; put what you found in the summary.\n"
              if not step.expects_changes else "")
    part_of_request = step.instructions.strip() != task["query"].strip()
    sections = [
        f"# Task\n\n{step.instructions}",
        f"## Files to change\n{files}",
        covering_tests_section(tests or [], test_command, readable=tests_readable),
        f"## Rules\n- Do not run git commands; the orchestrator commits after the user approves.\n"
        f"- Never touch files matching: {forbidden}\n{report}"
        f"- {BRIEF_REPLY}\n"
        + "".join(f"- The user's condition: {c}\n" for c in conditions or []),
        f"## Whole request (this step is one part of it)\n{task['query']}" if part_of_request else "",
        f"## Goal of this part\n{goal['title']}\n{goal.get('description', '')}".rstrip()
        if not single_goal else "",
        f"## Earlier steps (done)\n{earlier}" if earlier else "",
        f"## Findings of earlier steps\n{findings}" if findings else "",
        f"## Conversation before this request\n{conversation}" if conversation else "",
        feedback,
    ]
    return "\n\n".join(part for part in sections if part) + "\n"


def covering_tests_section(tests: list[str], command: str | None, *, readable: bool = False) -> str:
    """Which tests judge the step, named from the first attempt on (a bare agent learns of them
    from a failed run), and that they are not to be changed; `readable`: the agent has them as
    read-only files, to read for the exact behaviour and messages expected."""
    run = f" The orchestrator runs `{command}` after your change." if command else ""
    if not tests:
        return f"## Tests\nMake the project's tests pass.{run} Do not change test files." if command else ""
    names = ", ".join(tests)
    read = " (read them for the exact behaviour and messages expected)" if readable else ""
    return f"## Tests\nThe tests in {names} cover this change{read}: make them pass.{run} Do not change test files."


FEEDBACK_CHARS = 3000


def retry_section(recovery: Recovery, heading: str) -> str:
    """What went wrong last time, for the next attempt of the same step: the failure, its cause,
    what to do differently, whether the failed change is still in the files."""
    lines = [f"## {heading}", clip(recovery.failure, FEEDBACK_CHARS)]
    if recovery.root_cause:
        lines.append(f"Root cause: {recovery.root_cause}")
    if recovery.hint:
        lines.append(f"Do differently: {recovery.hint}")
    lines.append("Your previous change is still in the files: fix it so that the tests pass." if recovery.keep_changes
                 else "The workspace was reset to its state before this step.")
    lines.append(BRIEF_REPLY)  # a long failure invites a long answer: said again, last
    return "\n".join(lines)
