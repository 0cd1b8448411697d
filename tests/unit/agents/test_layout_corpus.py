"""Test command detection on the layouts of real public repositories (tests/fixtures/layouts/).

Each layout keeps a repository's file list (`files.txt`), the build and configuration files detection
reads (`files/`, with the repository's LICENSE beside them) and `source.json`: the repository, commit,
licence, the command and source expected, and for Python projects each test file's style as read
from the real file (unittest TestCases, pytest functions, or no test at all). The layout is rebuilt in
a temporary directory — listed files empty, kept files with their content, each Python test file a
tiny real test of its own style whose name says which file it is — and the detected command must be
the expected one. Python commands are then really run (`python3` is this venv's Python, which has
pytest), and every test file the project's own configuration points its runner at must have run
and passed: `runs_under` names that part (pytest `testpaths`), the whole tree otherwise.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.agents.test_command import detect_test_command

LAYOUTS = Path(__file__).resolve().parents[2] / "fixtures" / "layouts"
NAMES = sorted(path.name for path in LAYOUTS.iterdir() if (path / "source.json").is_file())
ANSI = re.compile(r"\x1b\[[0-9;]*m")
RUN_TIMEOUT = 60


def load(name: str) -> dict[str, Any]:
    source: dict[str, Any] = json.loads((LAYOUTS / name / "source.json").read_text(encoding="utf-8"))
    return source


def stand_in_name(rel: str) -> str:
    """The test in the stand-in for `rel`: unique, so the output shows which file ran."""
    return "test_in_" + re.sub(r"\W", "_", rel)


def stand_in(rel: str, style: str) -> str:
    """A tiny real test in the style of the repository's own file."""
    if style == "unittest":
        return (f"import unittest\n\n\nclass StandIn(unittest.TestCase):\n"
                f"    def {stand_in_name(rel)}(self):\n        self.assertTrue(True)\n")
    if style == "pytest":
        return f"def {stand_in_name(rel)}():\n    assert True\n"
    return "# a script named like a test, with no test in it\n"


def materialise(name: str, workspace: Path) -> dict[str, Any]:
    """Rebuild the layout under `workspace`; return its source.json."""
    source = load(name)
    styles: dict[str, str] = source.get("python_tests", {})
    kept = LAYOUTS / name / "files"
    for rel in (LAYOUTS / name / "files.txt").read_text(encoding="utf-8").splitlines():
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if (kept / rel).is_file():
            path.write_bytes((kept / rel).read_bytes())
        elif rel in styles:
            path.write_text(stand_in(rel, styles[rel]), encoding="utf-8")
        else:
            path.touch()
    return source


def expected_to_run(source: dict[str, Any]) -> set[str]:
    """The test files the project's runner must run: those with a test, under `runs_under` if set."""
    under = source.get("runs_under")
    return {rel for rel, style in source.get("python_tests", {}).items()
            if style != "none" and (under is None or any(rel == part or rel.startswith(part) for part in under))}


def run(argv: list[str], workspace: Path, *, path_python: bool) -> subprocess.CompletedProcess[str]:
    """The detected command as the entrypoint would run it, with this venv's Python for `python3`."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTEST_", "COV_")) and key != "PYTHONPATH"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTEST_ADDOPTS"] = "-rA -p no:cacheprovider"  # one PASSED line per test; nothing left behind
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the project runs without this venv's plugins
    if path_python:  # a Makefile's `python` is this venv's
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    argv = [sys.executable if arg == "python3" else arg for arg in argv]
    return subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          check=False)


def test_the_corpus_is_there_with_licences_and_pinned_commits() -> None:
    assert len(NAMES) >= 15
    for name in NAMES:
        source = load(name)
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), name
        assert source["licence"] and (LAYOUTS / name / "LICENSE").stat().st_size > 100, name
        assert len((LAYOUTS / name / "files.txt").read_text().splitlines()) <= 400, name
        assert set(source["expected"]) in ({"argv", "source"}, {"shell", "source"}), name
    python = [name for name in NAMES if load(name).get("python_tests")]
    assert len(python) >= 8  # the shapes detection got wrong before: root, nested, src, unittest-only …


@pytest.mark.parametrize("name", NAMES)
def test_detection_finds_the_projects_own_test_command(name: str, tmp_path: Path) -> None:
    source = materialise(name, tmp_path)
    expected = source["expected"]
    command = detect_test_command(tmp_path)
    assert command is not None, f"{source['repo']}: no test command found"
    assert (command.argv, command.shell) == (expected.get("argv"), expected.get("shell")), command.source
    assert expected["source"] in command.source


PYTHON_RUNS = [name for name in NAMES
               if expected_to_run(load(name)) and (load(name)["expected"].get("argv", [""])[0] == "python3"
                                                   or load(name).get("run_with_path"))]


@pytest.mark.parametrize("name", PYTHON_RUNS)
def test_the_detected_python_command_really_runs_every_test_file(name: str, tmp_path: Path) -> None:
    source = materialise(name, tmp_path)
    command = detect_test_command(tmp_path)
    assert command is not None and command.argv is not None
    argv = list(command.argv)
    unittest_run = argv[1:3] == ["-m", "unittest"]
    if unittest_run:
        argv.append("-v")  # one `… ok` line per test; pytest gets -rA (one PASSED line) through its env
    done = run(argv, tmp_path, path_python=source.get("run_with_path", False))
    output = ANSI.sub("", done.stdout + done.stderr)
    assert done.returncode == 0, output[-3000:]
    wanted = expected_to_run(source)
    ran = {rel for rel in source["python_tests"] if re.search(rf"\b{stand_in_name(rel)}\b.*\bok$|PASSED \S*::"
                                                             rf"(?:\w+::)?{stand_in_name(rel)}\b", output, re.M)}
    assert ran == wanted, f"missing {sorted(wanted - ran)}, unexpected {sorted(ran - wanted)}"
    count = re.search(r"^Ran (\d+) tests?" if unittest_run else r"(\d+) passed", output, re.M)
    assert count is not None and int(count.group(1)) == len(wanted), output[-1500:]
