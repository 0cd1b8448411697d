"""Which command runs the project's tests under `require_tests`, and where it came from.

Decided once, before any planning (`find_tests`), so the user sees it at the plan gate and in
progress, and asked for when nothing names one: a run under `require_tests` never commits work
whose tests could not be found. In order, the first that exists wins:
1. the request's `environment.testCommand` (the caller's own word);
2. the user's answer to "which command runs the tests?" (this run's, or remembered for the project);
3. detection on the workspace as it is now (`app/agents/test_command.py`: a step may have added tests);
4. what detection found at the run's start.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from app.agents.test_command import TestCommand, command_from_environment, detect_test_command
from app.graph.state_access import Inputs, Tests
from app.graph.state_parts import PlannedTestsDict

Origin = Literal["environment", "user", "remembered", "detected"]
#: Origins that name the command for the whole run: no detection overrides them.
GIVEN: frozenset[str] = frozenset({"environment", "user", "remembered"})
#: The longest answer taken as a command line.
MAX_ANSWER_CHARS = 500
#: Answers that say there is no command (a stop, not a command named "no").
_NONE = re.compile(
    r"^(?:no|nope|none|nothing|n/a|skip|don'?t know|i don'?t know|no tests?|without tests|"
    r"ne|nic|žádn[ýéá]|zadn[yea]|nevím|nevim|nejsou|bez test[ůu])[.!]?$", re.IGNORECASE)
_BACKTICKS = re.compile(r"`{1,3}(?:[a-z]+\n)?([^`]+?)`{1,3}")


def to_plan(command: TestCommand, origin: Origin) -> PlannedTestsDict:
    """The checkpointed form of a command (`state.test_plan`)."""
    return {"command": command.json_command(), "source": command.source, "origin": origin}


def from_plan(plan: Mapping[str, Any] | None) -> TestCommand | None:
    """The command a checkpointed plan holds, or None for a missing or malformed one."""
    if not plan:
        return None
    command, source = plan.get("command"), str(plan.get("source") or "the run's test plan")
    if isinstance(command, str) and command.strip():
        return TestCommand(shell=command, source=source)
    if isinstance(command, list) and command and all(isinstance(a, str) for a in command) and command[0]:
        return TestCommand(argv=list(command), source=source)
    return None


def command_for(state: Mapping[str, Any], workspace: Path) -> TestCommand | None:
    """The command a check runs now (the order of the module's docstring)."""
    if found := command_from_environment(Inputs.of(state).environment):
        return found
    plan = Tests.of(state).test_plan
    if plan and plan.get("origin") in GIVEN:
        return from_plan(plan)
    return detect_test_command(workspace) or from_plan(plan)


def command_from_answer(text: str) -> str | None:
    """The command line in the user's answer: a quoted one (`pytest -q`) or the answer's first
    line; None when the answer says there is none ("ne", "no tests", "nevím") or is empty."""
    quoted = _BACKTICKS.search(text)
    candidate = quoted.group(1) if quoted else next((line for line in text.splitlines() if line.strip()), "")
    candidate = candidate.strip().removeprefix("$ ").strip()
    if not candidate or len(candidate) > MAX_ANSWER_CHARS or _NONE.match(candidate):
        return None
    return candidate
