"""How many tokens the orchestration's own prompts cost, per purpose, for a given request.

    .venv/bin/python -m bench.prompts                              # the subtract request and an exercise
    .venv/bin/python -m bench.prompts --request "Add mul(a, b) to calc.py"

On a CPU the local model reads a prompt at 50-200 tokens a second (the embedded 1.5B model on 2
cores), so every thousand prompt tokens is 5-20 s before the first output token. Printed per
request: the coding agent's instructions on a first attempt and on a retry after failing tests, and
the prompts of the calls that a run may still make (classification when the rules are not certain,
the step plan of a request about several files, a reflection, a review), counted with the token
counter the service uses (`app.llm.provider.count_tokens`).
"""

from __future__ import annotations

import argparse
import sys

from app.graph import prompts
from app.graph.prompts import render_instructions
from app.graph.state_parts import GoalDict, Rules, TaskDict
from app.llm.provider import Message, count_tokens
from app.schemas.domain import CodingStep
from bench.exercises import load_exercises

SUBTRACT = "Add a subtract(a, b) function to calc.py that returns a - b"
MODEL = "openai/qwen2.5-coder-1.5b"
RULES: Rules = {"forbidden_files": ["*.env", "secrets/*"]}
FAILING_TESTS = ("Tests failed (python3 -m unittest test_calc):\nF.\n" + "=" * 70
                 + "\nFAIL: test_subtract (test_calc.CalcTest.test_subtract)\n"
                 + "AssertionError: 8 != 2\n\nRan 2 tests in 0.001s\n\nFAILED (failures=1)")
DIFF = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,5 @@\n def add(a, b):\n     return a + b\n+\n+def subtract(a, b):\n" \
       "+    return a + b\n"


def tokens(messages: list[Message] | str) -> int:
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    return count_tokens(MODEL, messages)


def figures(request: str, target: str, test_file: str) -> dict[str, int]:
    goal: GoalDict = {"id": "g1", "title": request.splitlines()[0][:80], "description": "", "complexity": "simple",
                      "dependencies": []}
    task: TaskDict = {"id": "t1", "client_id": "c1", "project_id": None, "workspace_path": "w", "query": request,
                      "agent_preference": "auto"}
    step = CodingStep(instructions=request, files=[target])
    first = render_instructions(step, goal, task, RULES, single_goal=True, tests=[test_file],
                                test_command=f"python3 -m unittest {test_file[:-3]}")
    retry = first + f"\n## Previous attempt 1 failed\n{FAILING_TESTS}\nYour previous change is still in the files.\n"
    return {
        "agent instructions, first attempt": tokens(first),
        "agent instructions, retry": tokens(retry),
        "classification (when the rules are unsure)": tokens(prompts.intake(
            query=request, context="Client: c1; project: p", recent="", clarification=None, language="en")),
        "step plan (a request about several files)": tokens(prompts.plan_steps(
            goal=request, task=None, done_before="", context="Client: c1; project: p", language="en")),
        "reflection (second failure on)": tokens(prompts.reflect(
            step=request, attempt=2, max_attempts=3, failure=FAILING_TESTS, agent_summary="Aider finished",
            output_tail="", diff=DIFF, history="", critical=True, language="en")),
        "review (require_review)": tokens(prompts.review(goal="", step=request, diff=DIFF, language="en")),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--request", help="another request (its file: the first one it names)")
    args = parser.parse_args()
    exercise = next(e for e in load_exercises() if e.slug == "leap")
    cases = {"subtract": (SUBTRACT, "calc.py", "test_calc.py"),
             "exercise leap": (exercise.request(), exercise.stub_file, exercise.test_file)}
    if args.request:
        cases = {"request": (args.request, "calc.py", "test_calc.py")}
    for name, (request, target, test_file) in cases.items():
        print(f"{name} ({tokens(request)} tokens of request)")
        for purpose, count in figures(request, target, test_file).items():
            print(f"  {purpose:<46} {count:6d} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
