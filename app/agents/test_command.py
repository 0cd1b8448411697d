"""Which command runs a project's tests, for the entrypoint's test mode (`.jervis/test.json`).

The request's `environment` may name it (`testCommand`); otherwise it is found the way the project's
own tools would find it (`app/agents/test_detection/`), the project's explicit word first:

1. a Makefile `test` target (else `check`, the GNU convention) — what the developers themselves run;
2. pytest configured at the root (pytest.ini, conftest.py, pyproject, setup.cfg, tox.ini);
3. the test files of a Python project — at the root (`triangle.py` beside `triangle_test.py`), in
   tests/ or test/, or anywhere under a root that is Python (pyproject.toml, setup.py, manage.py …):
   Django's `manage.py test`, `python -m unittest discover` when every file is a unittest one and one
   discover reaches them all, else pytest (see `test_detection/python.py` for the choice);
4. package.json `scripts.test`, with the project's package manager (packageManager, lockfile);
5. Gradle (gradlew), Maven (mvnw), Go modules, Cargo, then an unconfigured autotools tree;
6. Python test files anywhere else (a JavaScript project's stray script test comes after its own).

Python runs with the project's `.venv`/`venv` interpreter when it has one, else `python3` (the
entrypoint provides pytest for the run when that interpreter lacks it). Detection only reads files
(no subprocess, no network), walks a bounded number of entries and never raises: a file it cannot
read or parse simply gives no signal, because an odd repository must not fail a run.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from app.agents.test_detection.build_tools import (
    autotools_rule,
    cargo_rule,
    go_rule,
    gradle_rule,
    make_rule,
    maven_rule,
    npm_rule,
)
from app.agents.test_detection.command import LABEL_LIMIT, TestCommand
from app.agents.test_detection.files import MAX_FILE_BYTES, is_dir
from app.agents.test_detection.python import MAX_SCANNED_ENTRIES, PythonProject

__all__ = [
    "LABEL_LIMIT", "MAX_FILE_BYTES", "MAX_SCANNED_ENTRIES", "TestCommand", "command_from_environment",
    "detect_test_command", "resolve_test_command", "rules",
]

Rule = Callable[[], TestCommand | None]


def resolve_test_command(environment: dict[str, Any] | None, workspace: Path) -> TestCommand | None:
    """The request's own test command wins over anything guessed from the workspace."""
    return command_from_environment(environment) or detect_test_command(workspace)


def command_from_environment(environment: dict[str, Any] | None) -> TestCommand | None:
    """`testCommand` (or `test_command`) of the request's free-form environment: a non-empty string
    is a shell command line, a non-empty list of strings an argv; anything else is ignored."""
    if not isinstance(environment, dict):
        return None
    value = environment.get("testCommand")
    if value is None:
        value = environment.get("test_command")
    if isinstance(value, str) and value.strip():
        return TestCommand(shell=value.strip(), source="request environment")
    if isinstance(value, list) and value and all(isinstance(arg, str) for arg in value) and value[0]:
        return TestCommand(argv=list(value), source="request environment")
    return None


def rules(workspace: Path) -> tuple[Rule, ...]:
    """The rules in precedence order (module docstring); the Python walk runs once, when first needed."""
    python = PythonProject(workspace)
    return (
        partial(make_rule, workspace),
        python.configured_rule,
        python.project_rule,
        partial(npm_rule, workspace),
        partial(gradle_rule, workspace),
        partial(maven_rule, workspace),
        partial(go_rule, workspace),
        partial(cargo_rule, workspace),
        partial(autotools_rule, workspace),
        python.anywhere_rule,
    )


def detect_test_command(workspace: Path) -> TestCommand | None:
    """The first rule that recognises the workspace, or None when nothing says how to test it."""
    if not is_dir(workspace):
        return None
    for rule in rules(workspace):
        try:
            found = rule()
        except (OSError, ValueError, RecursionError):  # the readers guard too; an odd tree is no signal
            found = None
        if found is not None:
            return found
    return None
