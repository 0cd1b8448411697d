"""Python tests: pytest configuration, Django's `manage.py test`, and test files wherever they live.

The test files are pytest's default names (`test_*.py`, `*_test.py`) and unittest's (`test.py`,
`tests.py`, which its default pattern `test*.py` also takes), found by a bounded breadth-first walk
that skips what pytest skips (hidden directories, virtualenvs, `node_modules`, `build`, `dist`, …).

Which runner: pytest when the project configures it, has a `conftest.py`, or any test file is written
for it (`import pytest`, a module-level `def test_…`, a plain `class Test…:` — unittest would not run
those). When every test file is a unittest one, `python -m unittest discover` runs them with nothing
to install, but only where one discover reaches them all: one file pattern (unittest's `test*.py`,
or `-p '*_test.py'`), and every directory between the start directory and a test file a package
(discover does not enter plain directories). Otherwise pytest, which runs unittest TestCases too.
"""

from __future__ import annotations

import os
import posixpath
import re
import tomllib
from collections import deque
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from app.agents.test_detection.command import TestCommand
from app.agents.test_detection.files import has_ini_section, is_file, read_head, read_text

#: Directory entries the walk looks at; a tree larger than that gives what was found by then.
MAX_SCANNED_ENTRIES = 5000
#: Test files read to tell pytest from unittest, and how much of each; past that, pytest (it runs both).
MAX_CLASSIFIED_FILES = 400
CLASSIFY_BYTES = 64 * 1024
VENV_PYTHONS = (".venv/bin/python", "venv/bin/python")
#: Directories no runner should look into: pytest's `norecursedirs` and the usual environments.
SKIPPED_DIRS = frozenset({
    "node_modules", "venv", "env", "site-packages", "build", "dist", "__pycache__", "_darcs", "CVS", "{arch}",
    "__pypackages__", "htmlcov",
})
#: Files that make a root a Python project, so that its tests outrank other ecosystems' conventions.
PYTHON_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "Pipfile", "manage.py", "requirements.txt")
ROOT_TEST_DIRS = ("tests", "test")
UNITTEST_NAMES = ("test.py", "tests.py")

PYTEST_STYLE = re.compile(
    r"^[ \t]*(?:import[ \t]+pytest\b|from[ \t]+_?pytest\b)"  # pytest imported
    r"|@pytest\."  # a marker or fixture
    r"|^(?:async[ \t]+)?def[ \t]+test\w*[ \t]*\("  # a module-level test function
    r"|^class[ \t]+Test\w*[ \t]*(?:\([ \t]*(?:object)?[ \t]*\))?[ \t]*:",  # a test class without TestCase
    re.MULTILINE,
)
UNITTEST_STYLE = re.compile(r"\bunittest\b|TestCase\b")


def is_python_test(name: str) -> bool:
    """pytest's default file patterns, and unittest's own `test.py` / `tests.py`."""
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py") or name in UNITTEST_NAMES)


@dataclass
class PythonTests:
    """What the walk found: test files, packages and conftests, as POSIX paths relative to the root."""

    files: list[str] = field(default_factory=list)
    packages: set[str] = field(default_factory=set)  # directories with an __init__.py ("" is the root)
    conftest: bool = False
    truncated: bool = False


def scan(root: Path, limit: int = MAX_SCANNED_ENTRIES) -> PythonTests:
    """Walk the tree breadth first (shallow tests are found before a huge subtree uses the budget)."""
    found = PythonTests()
    queue: deque[str] = deque([""])
    seen = 0
    while queue:
        rel = queue.popleft()
        try:
            with os.scandir(root / rel if rel else root) as iterator:
                entries = sorted(iterator, key=lambda entry: entry.name)
        except OSError:
            continue
        seen += len(entries)
        for entry in entries:
            path = posixpath.join(rel, entry.name) if rel else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if _walks_into(entry.name, Path(entry.path)):
                        queue.append(path)
                elif entry.is_file():
                    if entry.name == "__init__.py":
                        found.packages.add(rel)
                    elif entry.name == "conftest.py":
                        found.conftest = True
                    elif is_python_test(entry.name):
                        found.files.append(path)
            except OSError:
                continue
        if seen > limit:
            found.truncated = bool(queue)
            break
    found.files.sort()
    return found


def _walks_into(name: str, path: Path) -> bool:
    """Not hidden, not a known non-source directory, not a virtualenv under another name."""
    if name.startswith(".") or name in SKIPPED_DIRS or name.endswith((".egg-info", ".egg")):
        return False
    return not is_file(path / "pyvenv.cfg")


class PythonProject:
    """The Python rules of one workspace; the walk runs at most once, and only when a rule needs it."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @cached_property
    def tests(self) -> PythonTests:
        return scan(self.root)

    @cached_property
    def python(self) -> str:
        """The project's own virtualenv (its dependencies are there, not in the image's Python)."""
        return next((rel for rel in VENV_PYTHONS if is_file(self.root / rel)), "python3")

    # ------------------------------------------------------------------ rules
    def configured_rule(self) -> TestCommand | None:
        """pytest when the project configures it at its root."""
        source = pytest_configuration(self.root)
        return None if source is None else self._pytest(source)

    def project_rule(self) -> TestCommand | None:
        """Test files of a Python project: at the root, in tests/ or test/, or anywhere under a root
        that says it is Python (pyproject.toml, setup.py, manage.py, a .py file …)."""
        if not self.tests.files or not (self._looks_python() or self._has_top_level_tests()):
            return None
        return self._command()

    def anywhere_rule(self) -> TestCommand | None:
        """Test files deep in a tree that no build file claims (after every other ecosystem)."""
        return self._command() if self.tests.files else None

    # ---------------------------------------------------------------- choices
    def _command(self) -> TestCommand:
        files = self.tests.files
        where = describe(files)
        unittest_only = self._style() == "unittest"
        if unittest_only and is_file(self.root / "manage.py"):  # Django's runner is unittest's discover
            return TestCommand(argv=[self.python, "manage.py", "test"], source=f"Django manage.py; {where}")
        if unittest_only:
            discover = unittest_discover(files, self.tests.packages)
            if discover is not None:
                return TestCommand(argv=[self.python, "-m", "unittest", "discover", *discover],
                                   source=f"{where}; unittest only")
        extra = [rel for rel in files if posixpath.basename(rel) in UNITTEST_NAMES]
        # pytest collects test.py / tests.py only when named; `.` keeps the rest of the tree
        return self._pytest(where, [".", *extra] if extra else [])

    def _pytest(self, source: str, paths: list[str] | None = None) -> TestCommand:
        return TestCommand(argv=[self.python, "-m", "pytest", "-q", *(paths or [])], source=source)

    def _style(self) -> str:
        """`unittest` when every test file is a unittest one (or empty), else `pytest`."""
        return self._classified

    @cached_property
    def _classified(self) -> str:
        """Read at most MAX_CLASSIFIED_FILES heads; anything unreadable or unread counts for pytest."""
        tests = self.tests
        if tests.conftest or tests.truncated or len(tests.files) > MAX_CLASSIFIED_FILES:
            return "pytest"
        unittest_files = 0
        for rel in tests.files:
            text = read_head(self.root / rel, CLASSIFY_BYTES)
            if text is None or PYTEST_STYLE.search(text):
                return "pytest"
            unittest_files += UNITTEST_STYLE.search(text) is not None
        return "unittest" if unittest_files else "pytest"

    def _looks_python(self) -> bool:
        if any(is_file(self.root / name) for name in PYTHON_MARKERS):
            return True
        return any("/" not in rel for rel in self.tests.files)  # test files at the root

    def _has_top_level_tests(self) -> bool:
        return any(rel.split("/", 1)[0] in ROOT_TEST_DIRS for rel in self.tests.files)


# -------------------------------------------------------------------- unittest
def unittest_discover(files: list[str], packages: set[str]) -> list[str] | None:
    """`discover` arguments that reach every file, or None when one discover cannot."""
    names = [posixpath.basename(rel) for rel in files]
    if all(name.startswith("test") for name in names):
        pattern = None  # unittest's own test*.py
    elif all(name.endswith("_test.py") for name in names):
        pattern = "*_test.py"
    else:
        return None
    start = posixpath.commonpath([posixpath.dirname(rel) for rel in files])
    for rel in files:
        directory = posixpath.dirname(rel)
        while directory != start:  # discover only enters packages
            if directory not in packages:
                return None
            directory = posixpath.dirname(directory)
    top = start
    while top and top in packages:  # a package start is imported under its dotted name
        top = posixpath.dirname(top)
    arguments = ["-s", start] if start else []
    if top != start:
        arguments += ["-t", top or "."]
    return arguments + (["-p", pattern] if pattern else [])


def describe(files: list[str]) -> str:
    """Where the test files are, for the command's source: `Python test files at the root
    (triangle_test.py)`, `… in tests/ (12 files)`, `… in tornado/test/, maint/test/ and 1 more place`."""
    places: dict[str, list[str]] = {}
    for rel in files:
        places.setdefault(posixpath.dirname(rel), []).append(posixpath.basename(rel))
    tops: dict[str, int] = {}
    for directory, names in places.items():
        top = _shallowest(directory, places)
        tops[top] = tops.get(top, 0) + len(names)
    ordered = sorted(tops, key=lambda place: (-tops[place], place))
    if len(ordered) == 1 and ordered[0] == "":
        names = places[""]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        return f"Python test files at the root ({shown})"
    labels = ["the root" if place == "" else f"{place}/" for place in ordered]
    count = f"{len(files)} file{'s' if len(files) != 1 else ''}"
    if len(labels) == 1:
        return f"Python test files in {labels[0]} ({count})"
    more = len(labels) - 2
    listed = ", ".join(labels[:2]) + (f" and {more} more place{'s' if more != 1 else ''}" if more else "")
    return f"Python test files in {listed} ({count})"


def _shallowest(directory: str, places: dict[str, list[str]]) -> str:
    """The highest directory holding test files that contains `directory` (tests/ for tests/unit/)."""
    best = directory
    parent = directory
    while parent:
        parent = posixpath.dirname(parent)
        if parent in places:
            best = parent
    return best


# ---------------------------------------------------------------------- pytest
def pytest_configuration(workspace: Path) -> str | None:
    """Where pytest is configured at the root, or None."""
    if is_file(workspace / "pytest.ini"):
        return "pytest configuration in pytest.ini"
    if is_file(workspace / "conftest.py"):
        return "pytest configuration in conftest.py"
    if _pyproject_configures_pytest(workspace / "pyproject.toml"):
        return "pytest configuration in pyproject.toml"
    if has_ini_section(workspace / "setup.cfg", "tool:pytest"):
        return "pytest configuration in setup.cfg"
    if has_ini_section(workspace / "tox.ini", "pytest"):
        return "pytest configuration in tox.ini"
    return None


def _pyproject_configures_pytest(path: Path) -> bool:
    """`[tool.pytest.ini_options]`, or pytest 9's native `[tool.pytest]` table."""
    text = read_text(path)
    if text is None:
        return False
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return False
    tool = data.get("tool")
    return isinstance(tool, dict) and isinstance(tool.get("pytest"), dict)

