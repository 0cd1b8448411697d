"""Which command runs a project's tests, for the entrypoint's test mode (`.jervis/test.json`).

The request's `environment` may name it (`testCommand`); otherwise it is guessed from the files at the
workspace root, most explicit first: a Makefile `test` target is the project's own word, then the
conventions of each build tool. Detection only reads files (no subprocess, no network) and never
raises: a file it cannot read or parse simply gives no signal, because an odd repository must not
fail a run, it just runs without tests.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator

#: Larger files are not read: a build file that size is no build file.
MAX_FILE_BYTES = 1 << 20
#: Directory entries looked at while searching tests/ for Python test files.
MAX_SCANNED_ENTRIES = 5000
#: GNU make's own lookup order: the first one found is the one `make test` uses.
MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
#: A rule line naming `test` among its targets (`test:`, `unit test ::`), not `test := …` or `test ::= …`.
MAKE_TEST_RULE = re.compile(r"^(?:[^\s:=#]+[ \t]+)*test(?:[ \t]+[^\s:=#]+)*[ \t]*::?(?![:=])", re.MULTILINE)
NPM_PLACEHOLDER = "no test specified"
VENV_PYTHONS = (".venv/bin/python", "venv/bin/python")
PYTHON_TEST_DIRS = ("tests", "test")
LABEL_LIMIT = 200


class TestCommand(BaseModel):
    """A test command: a shell command line or an argv (exactly one), and where it came from."""

    __test__: ClassVar[bool] = False  # a class named Test* is not a pytest test class
    model_config = ConfigDict(frozen=True, extra="forbid")

    argv: list[str] | None = None
    shell: str | None = None
    source: str

    @model_validator(mode="after")
    def _exactly_one_form(self) -> TestCommand:
        """The entrypoint needs one unambiguous command: `sh -c <shell>` or the argv as given."""
        if (self.argv is None) == (self.shell is None):
            raise ValueError("exactly one of argv and shell must be set")
        if self.shell is not None and not self.shell.strip():
            raise ValueError("shell must not be empty")
        if self.argv is not None and not (self.argv and self.argv[0]):
            raise ValueError("argv must name a program")
        return self

    def json_command(self) -> str | list[str]:
        """The value of `command` in `.jervis/test.json` (a string runs through `sh -c`)."""
        return self.shell if self.shell is not None else list(self.argv or [])

    def label(self) -> str:
        """The command on one short line, for summaries and logs."""
        text = " ".join(self.shell.split()) if self.shell is not None else shlex.join(self.argv or [])
        return text if len(text) <= LABEL_LIMIT else text[: LABEL_LIMIT - 1] + "…"


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


def detect_test_command(workspace: Path) -> TestCommand | None:
    """The first rule that recognises the workspace, or None when nothing says how to test it."""
    if not _is_dir(workspace):
        return None
    for rule in RULES:
        try:
            found = rule(workspace)
        except (OSError, ValueError, RecursionError):  # the readers guard too; an odd tree is no signal
            found = None
        if found is not None:
            return found
    return None


# ------------------------------------------------------------------------ rules
def make_rule(workspace: Path) -> TestCommand | None:
    """`make test` when the makefile make would use defines a `test` target."""
    for name in MAKEFILES:
        if _is_file(workspace / name):
            text = _read_text(workspace / name)
            if text is not None and MAKE_TEST_RULE.search(text):
                return TestCommand(argv=["make", "test"], source=f"{name} target test")
            return None  # make reads only the first makefile it finds
    return None


def pytest_rule(workspace: Path) -> TestCommand | None:
    """pytest when the project configures it or has Python test files, with the project's own
    virtualenv when it has one (its dependencies are there, not in the image's Python)."""
    source = _pytest_signal(workspace)
    if source is None:
        return None
    python = next((rel for rel in VENV_PYTHONS if _is_file(workspace / rel)), "python3")
    return TestCommand(argv=[python, "-m", "pytest", "-q"], source=source)


def npm_rule(workspace: Path) -> TestCommand | None:
    """`npm test` when package.json has a real `scripts.test` (not npm's init placeholder)."""
    package = _read_json(workspace / "package.json")
    scripts = package.get("scripts") if isinstance(package, dict) else None
    script = scripts.get("test") if isinstance(scripts, dict) else None
    if isinstance(script, str) and script.strip() and NPM_PLACEHOLDER not in script:
        return TestCommand(argv=["npm", "test"], source="package.json scripts.test")
    return None


def gradle_rule(workspace: Path) -> TestCommand | None:
    """The Gradle wrapper when the project ships one (it pins the Gradle version), else gradle."""
    if _is_file(workspace / "gradlew"):
        return TestCommand(argv=["./gradlew", "test"], source="gradlew")
    for name in ("build.gradle", "build.gradle.kts"):
        if _is_file(workspace / name):
            return TestCommand(argv=["gradle", "test"], source=name)
    return None


def maven_rule(workspace: Path) -> TestCommand | None:
    """The Maven wrapper when present next to pom.xml, else mvn; quiet, the tail is what counts."""
    if not _is_file(workspace / "pom.xml"):
        return None
    if _is_file(workspace / "mvnw"):
        return TestCommand(argv=["./mvnw", "-q", "test"], source="pom.xml with mvnw")
    return TestCommand(argv=["mvn", "-q", "test"], source="pom.xml")


def go_rule(workspace: Path) -> TestCommand | None:
    """Every package of the Go module."""
    return TestCommand(argv=["go", "test", "./..."], source="go.mod") if _is_file(workspace / "go.mod") else None


def cargo_rule(workspace: Path) -> TestCommand | None:
    """The Cargo package or workspace."""
    return TestCommand(argv=["cargo", "test"], source="Cargo.toml") if _is_file(workspace / "Cargo.toml") else None


RULES: tuple[Callable[[Path], TestCommand | None], ...] = (
    make_rule, pytest_rule, npm_rule, gradle_rule, maven_rule, go_rule, cargo_rule,
)


# ----------------------------------------------------------------- pytest signals
def _pytest_signal(workspace: Path) -> str | None:
    """Where pytest is configured, or where Python tests live; None when neither."""
    if _is_file(workspace / "pytest.ini"):
        return "pytest configuration in pytest.ini"
    if _is_file(workspace / "conftest.py"):
        return "pytest configuration in conftest.py"
    if _pyproject_configures_pytest(workspace / "pyproject.toml"):
        return "pytest configuration in pyproject.toml"
    if _has_ini_section(workspace / "setup.cfg", "tool:pytest"):
        return "pytest configuration in setup.cfg"
    if _has_ini_section(workspace / "tox.ini", "pytest"):
        return "pytest configuration in tox.ini"
    for name in PYTHON_TEST_DIRS:
        if _has_python_tests(workspace / name):
            return f"Python tests in {name}/"
    return None


def _pyproject_configures_pytest(path: Path) -> bool:
    """`[tool.pytest.ini_options]`, or pytest 9's native `[tool.pytest]` table."""
    text = _read_text(path)
    if text is None:
        return False
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return False
    tool = data.get("tool")
    return isinstance(tool, dict) and isinstance(tool.get("pytest"), dict)


def _has_ini_section(path: Path, section: str) -> bool:
    """A `[section]` header line; a line match, because configparser gives up on odd files."""
    text = _read_text(path)
    return text is not None and re.search(rf"^\[{re.escape(section)}\][ \t]*$", text, re.MULTILINE) is not None


def _has_python_tests(directory: Path) -> bool:
    """A `test_*.py` or `*_test.py` file anywhere below `directory` (hidden directories skipped;
    the walk is bounded, a huge tree is not worth the wait)."""
    if not _is_dir(directory):
        return False
    seen = 0
    for _root, dirs, files in os.walk(directory, onerror=lambda exc: None):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if any(_is_python_test(name) for name in files):
            return True
        seen += len(dirs) + len(files)
        if seen > MAX_SCANNED_ENTRIES:
            return False
    return False


def _is_python_test(name: str) -> bool:
    """pytest's default file patterns."""
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


# --------------------------------------------------------------- safe file access
def _is_file(path: Path) -> bool:
    """A regular file (after symlinks); unreadable or odd entries (sockets, FIFOs) are not."""
    try:
        return path.is_file()
    except OSError:
        return False


def _is_dir(path: Path) -> bool:
    """A directory (after symlinks); False instead of an error."""
    try:
        return path.is_dir()
    except OSError:
        return False


def _read_text(path: Path) -> str | None:
    """A small regular file as text (bad bytes replaced), or None when it cannot be read."""
    if not _is_file(path):
        return None
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_FILE_BYTES:
        return None
    return data.decode("utf-8", errors="replace")


def _read_json(path: Path) -> Any:
    """Parsed JSON, or None when the file is missing, unreadable or not JSON."""
    text = _read_text(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None
