"""Test command detection (app/agents/test_command.py) on real temporary workspaces."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from app.agents.test_command import (
    MAX_FILE_BYTES,
    TestCommand,
    command_from_environment,
    detect_test_command,
    resolve_test_command,
)

PYTEST = ["python3", "-m", "pytest", "-q"]


def write(workspace: Path, rel: str, content: str | bytes = "") -> Path:
    """Create a file (and its directories) in the workspace."""
    path = workspace / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def detected(workspace: Path) -> tuple[list[str] | None, str] | None:
    """argv and source of the detected command (detection only ever yields argv commands)."""
    command = detect_test_command(workspace)
    return None if command is None else (command.argv, command.source)


# ------------------------------------------------------------------ TestCommand
def test_shell_command_is_a_string_in_test_json() -> None:
    command = TestCommand(shell="make lint && make test", source="request environment")
    assert command.json_command() == "make lint && make test"
    assert command.label() == "make lint && make test"


def test_argv_command_is_a_list_in_test_json_and_its_label_is_shell_quoted() -> None:
    command = TestCommand(argv=["pytest", "-k", "not slow"], source="request environment")
    assert command.json_command() == ["pytest", "-k", "not slow"]
    assert command.label() == "pytest -k 'not slow'"


def test_label_is_one_short_line() -> None:
    command = TestCommand(shell="make \\\n  test " + "x" * 500, source="request environment")
    assert "\n" not in command.label() and len(command.label()) == 200 and command.label().endswith("…")


@pytest.mark.parametrize("fields", [
    {"argv": ["make", "test"], "shell": "make test"},  # both
    {},  # neither
    {"shell": "  "},
    {"argv": []},
    {"argv": ["", "test"]},
])
def test_command_needs_exactly_one_non_empty_form(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        TestCommand(source="x", **fields)


def test_command_is_frozen() -> None:
    command = TestCommand(shell="make test", source="x")
    with pytest.raises(ValidationError):
        command.shell = "rm -rf /"  # type: ignore[misc]


# --------------------------------------------------------------------- Makefile
@pytest.mark.parametrize("rule", ["test:", "test :", "test::", "test: lint unit", "check test:", "test\t: all"])
def test_makefile_with_a_test_target_gives_make_test(tmp_path: Path, rule: str) -> None:
    write(tmp_path, "Makefile", f"all:\n\t@echo all\n\n{rule}\n\t@echo testing\n")
    assert detected(tmp_path) == (["make", "test"], "Makefile target test")


@pytest.mark.parametrize("name", ["makefile", "GNUmakefile"])
def test_other_makefile_names_count_too(tmp_path: Path, name: str) -> None:
    write(tmp_path, name, "test:\n\t@true\n")
    assert detected(tmp_path) == (["make", "test"], f"{name} target test")


@pytest.mark.parametrize("line", ["test := unit", "test ::= unit", "test:=unit", "test ?= unit", ".PHONY: test",
                                  "tests:", "mytest:", "TEST:", "\t@echo test: done", "# test:"])
def test_makefile_without_a_test_rule_gives_nothing(tmp_path: Path, line: str) -> None:
    write(tmp_path, "Makefile", f"all:\n\t@true\n{line}\n")
    assert detect_test_command(tmp_path) is None


def test_gnumakefile_hides_the_makefile_as_it_does_for_make(tmp_path: Path) -> None:
    """make reads only GNUmakefile here, so the Makefile's test target would not run."""
    write(tmp_path, "GNUmakefile", "all:\n\t@true\n")
    write(tmp_path, "Makefile", "test:\n\t@true\n")
    assert detect_test_command(tmp_path) is None


# ----------------------------------------------------------------------- pytest
@pytest.mark.parametrize(("rel", "content", "source"), [
    ("pytest.ini", "[pytest]\n", "pytest configuration in pytest.ini"),
    ("conftest.py", "", "pytest configuration in conftest.py"),
    ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-q'\n", "pytest configuration in pyproject.toml"),
    ("pyproject.toml", "[tool.pytest]\nminversion = '9.0'\n", "pytest configuration in pyproject.toml"),
    ("setup.cfg", "[metadata]\nname = x\n\n[tool:pytest]\ntestpaths = tests\n", "pytest configuration in setup.cfg"),
    ("tox.ini", "[tox]\nenvlist = py311\n\n[pytest]\naddopts = -q\n", "pytest configuration in tox.ini"),
])
def test_pytest_configuration_gives_pytest(tmp_path: Path, rel: str, content: str, source: str) -> None:
    write(tmp_path, rel, content)
    assert detected(tmp_path) == (PYTEST, source)


@pytest.mark.parametrize(("rel", "source"), [
    ("tests/test_app.py", "Python test files in tests/ (1 file)"),
    ("test/app_test.py", "Python test files in test/ (1 file)"),
    ("tests/unit/api/test_routes.py", "Python test files in tests/unit/api/ (1 file)"),
    ("test_app.py", "Python test files at the root (test_app.py)"),
    ("triangle_test.py", "Python test files at the root (triangle_test.py)"),
])
def test_pytest_style_test_files_give_pytest(tmp_path: Path, rel: str, source: str) -> None:
    write(tmp_path, rel, "def test_x():\n    assert True\n")
    assert detected(tmp_path) == (PYTEST, source)


@pytest.mark.parametrize("rel", ["tests/helpers.py", "tests/data/test_input.json", "tests/.cache/test_x.py",
                                 "node_modules/pkg/test_x.py", "venv/lib/test_x.py", "build/lib/test_x.py",
                                 "dist/test_x.py", "src/__pycache__/test_x.py", "pkg.egg-info/test_x.py",
                                 "testing.py", "contest.py", "src/latest.py"])
def test_python_files_that_are_not_tests_or_sit_where_no_runner_looks_give_nothing(tmp_path: Path, rel: str) -> None:
    write(tmp_path, rel, "def test_x():\n    assert True\n")
    assert detect_test_command(tmp_path) is None


def test_a_virtualenv_under_any_name_is_not_searched(tmp_path: Path) -> None:
    write(tmp_path, "myenv/pyvenv.cfg", "home = /usr/bin\n")
    write(tmp_path, "myenv/lib/python3.12/site/test_x.py", "def test_x(): pass\n")
    assert detect_test_command(tmp_path) is None


UNITTEST_FILE = "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        pass\n"
UNITTEST = ["python3", "-m", "unittest", "discover"]


@pytest.mark.parametrize(("files", "arguments", "source"), [
    (["triangle_test.py"], ["-p", "*_test.py"], "Python test files at the root (triangle_test.py); unittest only"),
    (["test_app.py", "test.py"], [], "Python test files at the root (test.py, test_app.py); unittest only"),
    (["tests/test_a.py", "tests/test_b.py"], ["-s", "tests"], "Python test files in tests/ (2 files)"),
    (["pkg/__init__.py", "pkg/tests/__init__.py", "pkg/tests/test_a.py"], ["-s", "pkg/tests", "-t", "."],
     "Python test files in pkg/tests/ (1 file)"),
    (["src/pkg/__init__.py", "src/pkg/test/__init__.py", "src/pkg/test/web_test.py", "src/pkg/test/io_test.py"],
     ["-s", "src/pkg/test", "-t", "src", "-p", "*_test.py"], "Python test files in src/pkg/test/ (2 files)"),
    (["tests/test_a.py", "tests/unit/__init__.py", "tests/unit/test_b.py"], ["-s", "tests"],
     "Python test files in tests/ (2 files)"),
])
def test_unittest_only_projects_run_with_one_unittest_discover(tmp_path: Path, files: list[str],
                                                               arguments: list[str], source: str) -> None:
    write(tmp_path, "setup.py", "")
    for rel in files:
        write(tmp_path, rel, "" if rel.endswith("__init__.py") else UNITTEST_FILE)
    command = detect_test_command(tmp_path)
    assert command is not None and command.argv == UNITTEST + arguments
    assert command.source.startswith(source) and command.source.endswith("; unittest only")


@pytest.mark.parametrize(("files", "why"), [
    (["test_a.py", "b_test.py"], "two file patterns: one discover cannot take both"),
    (["tests/unit/test_b.py", "tests/test_a.py"], "tests/unit/ is no package: discover would not enter it"),
    (["a/test_x.py", "b/test_y.py"], "the common start (the root) reaches a/ and b/ only as packages"),
])
def test_unittest_files_one_discover_cannot_reach_run_with_pytest(tmp_path: Path, files: list[str], why: str) -> None:
    for rel in files:
        write(tmp_path, rel, UNITTEST_FILE)
    write(tmp_path, "pyproject.toml", "[project]\nname = 'x'\n")
    command = detect_test_command(tmp_path)
    assert command is not None and command.argv == PYTEST, why


@pytest.mark.parametrize(("other", "content"), [
    ("test_b.py", "import pytest\n"),
    ("test_b.py", "def test_plain():\n    assert 1\n"),  # unittest would never call it
    ("test_b.py", "async def test_plain():\n    pass\n"),
    ("test_b.py", "class TestPlain:\n    def test_x(self):\n        pass\n"),
    ("test_b.py", "from pytest import raises\n"),
    ("sub/conftest.py", ""),
])
def test_any_pytest_sign_makes_a_unittest_project_run_with_pytest(tmp_path: Path, other: str, content: str) -> None:
    write(tmp_path, "test_a.py", UNITTEST_FILE)
    write(tmp_path, other, content)
    command = detect_test_command(tmp_path)
    assert command is not None and command.argv == PYTEST


def test_files_without_any_runner_sign_run_with_pytest(tmp_path: Path) -> None:
    write(tmp_path, "test_a.py", "")
    assert detected(tmp_path) == (PYTEST, "Python test files at the root (test_a.py)")


def test_pytest_names_test_py_files_it_would_not_collect_itself(tmp_path: Path) -> None:
    write(tmp_path, "test.py", "def test_x():\n    pass\n")
    write(tmp_path, "tests/test_a.py", "def test_y():\n    pass\n")
    command = detect_test_command(tmp_path)
    assert command is not None and command.argv == [*PYTEST, ".", "test.py"]


@pytest.mark.parametrize("venv", [".venv", "venv"])
def test_unittest_uses_the_workspace_virtualenv(tmp_path: Path, venv: str) -> None:
    write(tmp_path, "triangle_test.py", UNITTEST_FILE)
    write(tmp_path, f"{venv}/bin/python", "#!/bin/sh\n")
    command = detect_test_command(tmp_path)
    assert command is not None and command.argv == [f"{venv}/bin/python", "-m", "unittest", "discover",
                                                    "-p", "*_test.py"]


def test_django_project_runs_manage_py_test(tmp_path: Path) -> None:
    write(tmp_path, "manage.py", "#!/usr/bin/env python\n")
    write(tmp_path, "blog/__init__.py")
    write(tmp_path, "blog/tests.py", "from django.test import TestCase\n\n\nclass T(TestCase):\n    pass\n")
    assert detected(tmp_path) == (["python3", "manage.py", "test"],
                                  "Django manage.py; Python test files in blog/ (1 file)")


def test_django_project_with_pytest_style_tests_runs_pytest(tmp_path: Path) -> None:
    write(tmp_path, "manage.py", "")
    write(tmp_path, "blog/tests.py", "import pytest\n")
    command = detect_test_command(tmp_path)
    assert command is not None and command.argv == [*PYTEST, ".", "blog/tests.py"]


def test_source_names_several_places_and_counts_files(tmp_path: Path) -> None:
    for rel in ["tests/test_a.py", "tests/unit/test_b.py", "tools/test_c.py", "docs/x/test_d.py"]:
        write(tmp_path, rel, "def test_x(): pass\n")
    command = detect_test_command(tmp_path)
    assert command is not None and command.source == "Python test files in tests/, docs/x/ and 1 more place (4 files)"


def test_the_walk_is_bounded_and_shallow_tests_are_found_first(tmp_path: Path) -> None:
    for n in range(60):
        write(tmp_path, f"aaa/{n:03}/filler.txt")
    for n in range(200):
        write(tmp_path, f"aaa/000/{n:03}.txt")
    write(tmp_path, "zzz/test_deep.py", "def test_x(): pass\n")
    write(tmp_path, "setup.py")
    from app.agents.test_detection.python import scan
    assert scan(tmp_path, limit=100).files == ["zzz/test_deep.py"]  # breadth first: zzz/ before aaa/000/
    assert scan(tmp_path, limit=10).files == []
    assert scan(tmp_path, limit=10).truncated


@pytest.mark.parametrize(("rel", "content"), [
    ("pyproject.toml", "[project]\nname = 'x'\n\n[tool.ruff]\nline-length = 120\n"),
    ("pyproject.toml", "tool = 'pytest'\n"),
    ("setup.cfg", "[tool:pytest-watch]\nrunner = x\n"),
    ("tox.ini", "[testenv]\ncommands = pytest\n"),
])
def test_python_configuration_without_pytest_gives_nothing(tmp_path: Path, rel: str, content: str) -> None:
    write(tmp_path, rel, content)
    assert detect_test_command(tmp_path) is None


@pytest.mark.parametrize(("venvs", "python"), [
    ([".venv"], ".venv/bin/python"),
    (["venv"], "venv/bin/python"),
    ([".venv", "venv"], ".venv/bin/python"),
])
def test_pytest_uses_the_workspace_virtualenv(tmp_path: Path, venvs: list[str], python: str) -> None:
    write(tmp_path, "pytest.ini", "[pytest]\n")
    for venv in venvs:
        write(tmp_path, f"{venv}/bin/python", "#!/bin/sh\n")
    assert detected(tmp_path) == ([python, "-m", "pytest", "-q"], "pytest configuration in pytest.ini")


def test_pytest_ignores_a_virtualenv_whose_python_link_is_broken(tmp_path: Path) -> None:
    """A venv made on another machine points at a Python that is not here."""
    write(tmp_path, "pytest.ini", "[pytest]\n")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to("/nonexistent/python3.12")
    assert detected(tmp_path) == (PYTEST, "pytest configuration in pytest.ini")


# -------------------------------------------------------------------------- npm
def test_package_json_test_script_gives_npm_test(tmp_path: Path) -> None:
    write(tmp_path, "package.json", json.dumps({"name": "x", "scripts": {"test": "jest --ci"}}))
    assert detected(tmp_path) == (["npm", "test"], "package.json scripts.test")


@pytest.mark.parametrize("package", [
    {"scripts": {"test": 'echo "Error: no test specified" && exit 1'}},  # what `npm init` writes
    {"scripts": {"build": "tsc"}},
    {"scripts": {"test": ""}},
    {"scripts": {"test": ["jest"]}},
    {"scripts": "jest"},
    {"name": "x"},
    ["scripts", "test"],
])
def test_package_json_without_a_real_test_script_gives_nothing(tmp_path: Path, package: Any) -> None:
    write(tmp_path, "package.json", json.dumps(package))
    assert detect_test_command(tmp_path) is None


@pytest.mark.parametrize(("files", "argv", "source"), [
    ({"yarn.lock": ""}, ["yarn", "test"], "package.json scripts.test (yarn.lock)"),
    ({"pnpm-lock.yaml": ""}, ["pnpm", "test"], "package.json scripts.test (pnpm-lock.yaml)"),
    ({"package-lock.json": "{}"}, ["npm", "test"], "package.json scripts.test (package-lock.json)"),
    ({"bun.lock": ""}, ["bun", "run", "test"], "package.json scripts.test (bun.lock)"),
    ({"pnpm-lock.yaml": "", "yarn.lock": ""}, ["pnpm", "test"], "package.json scripts.test (pnpm-lock.yaml)"),
])
def test_package_manager_follows_the_lockfile(tmp_path: Path, files: dict[str, str], argv: list[str],
                                              source: str) -> None:
    write(tmp_path, "package.json", json.dumps({"scripts": {"test": "jest"}}))
    for name, content in files.items():
        write(tmp_path, name, content)
    assert detected(tmp_path) == (argv, source)


@pytest.mark.parametrize(("declared", "argv"), [("pnpm@10.14.0+sha512.abc", ["pnpm", "test"]),
                                                ("yarn@4.1.0", ["yarn", "test"]), ("npm@10.0.0", ["npm", "test"])])
def test_package_manager_field_wins_over_lockfiles(tmp_path: Path, declared: str, argv: list[str]) -> None:
    write(tmp_path, "package.json", json.dumps({"packageManager": declared, "scripts": {"test": "ava"}}))
    write(tmp_path, "package-lock.json", "{}")
    command = detect_test_command(tmp_path)
    assert command is not None and command.argv == argv and "packageManager" in command.source


def test_unknown_package_manager_field_falls_back_to_the_lockfile(tmp_path: Path) -> None:
    write(tmp_path, "package.json", json.dumps({"packageManager": "deno@2", "scripts": {"test": "ava"}}))
    write(tmp_path, "yarn.lock", "")
    assert detected(tmp_path) == (["yarn", "test"], "package.json scripts.test (yarn.lock)")


# ---------------------------------------------------------- make check, autotools
def test_makefile_check_target_without_test_gives_make_check(tmp_path: Path) -> None:
    write(tmp_path, "Makefile", "all:\n\t@true\ncheck: all\n\t./run-tests\n")
    assert detected(tmp_path) == (["make", "check"], "Makefile target check")


def test_makefile_test_target_wins_over_check(tmp_path: Path) -> None:
    write(tmp_path, "Makefile", "check: hiredis-test\n\t./test.sh\ntest: hiredis-test\n\t./test.sh\n")
    assert detected(tmp_path) == (["make", "test"], "Makefile target test")


def test_unconfigured_autotools_tree_is_configured_then_checked(tmp_path: Path) -> None:
    write(tmp_path, "configure.ac", "AC_INIT([x], [1])\n")
    write(tmp_path, "Makefile.am", "TESTS = tests/a\n")
    command = detect_test_command(tmp_path)
    assert command == TestCommand(shell="autoreconf -fi && ./configure && make check",
                                  source="autotools (configure.ac and Makefile.am: make check)")


def test_configured_autotools_tree_uses_its_makefile(tmp_path: Path) -> None:
    write(tmp_path, "configure.ac", "")
    write(tmp_path, "Makefile.am", "")
    write(tmp_path, "Makefile", "check: check-am\n\t@true\n")
    assert detected(tmp_path) == (["make", "check"], "Makefile target check")


@pytest.mark.parametrize("present", [["configure.ac"], ["Makefile.am"]])
def test_half_an_autotools_tree_is_no_signal(tmp_path: Path, present: list[str]) -> None:
    for name in present:
        write(tmp_path, name, "")
    assert detect_test_command(tmp_path) is None


# ------------------------------------------------------------- JVM, Go and Rust
def test_gradle_wrapper_gives_gradlew_test(tmp_path: Path) -> None:
    write(tmp_path, "gradlew", "#!/bin/sh\n")
    write(tmp_path, "build.gradle.kts", "")
    assert detected(tmp_path) == (["./gradlew", "test"], "gradlew")


@pytest.mark.parametrize("name", ["build.gradle", "build.gradle.kts", "settings.gradle.kts"])
def test_gradle_build_without_wrapper_gives_gradle_test(tmp_path: Path, name: str) -> None:
    write(tmp_path, name, "")
    assert detected(tmp_path) == (["gradle", "test"], name)


def test_pom_gives_mvn_test(tmp_path: Path) -> None:
    write(tmp_path, "pom.xml", "<project/>")
    assert detected(tmp_path) == (["mvn", "-q", "test"], "pom.xml")


def test_pom_with_maven_wrapper_gives_mvnw_test(tmp_path: Path) -> None:
    write(tmp_path, "pom.xml", "<project/>")
    write(tmp_path, "mvnw", "#!/bin/sh\n")
    assert detected(tmp_path) == (["./mvnw", "-q", "test"], "pom.xml with mvnw")


def test_maven_wrapper_without_pom_gives_nothing(tmp_path: Path) -> None:
    write(tmp_path, "mvnw", "#!/bin/sh\n")
    assert detect_test_command(tmp_path) is None


def test_go_module_gives_go_test_of_all_packages(tmp_path: Path) -> None:
    write(tmp_path, "go.mod", "module example.com/x\n")
    assert detected(tmp_path) == (["go", "test", "./..."], "go.mod")


def test_cargo_manifest_gives_cargo_test(tmp_path: Path) -> None:
    write(tmp_path, "Cargo.toml", "[package]\nname = 'x'\n")
    assert detected(tmp_path) == (["cargo", "test"], "Cargo.toml")


def test_workspace_without_any_signal_gives_nothing(tmp_path: Path) -> None:
    write(tmp_path, "README.md", "# x\n")
    write(tmp_path, "src/main.py", "print('x')\n")
    assert detect_test_command(tmp_path) is None


@pytest.mark.parametrize("name", ["missing", "a-file"])
def test_workspace_that_is_not_a_directory_gives_nothing(tmp_path: Path, name: str) -> None:
    write(tmp_path, "a-file", "x")
    assert detect_test_command(tmp_path / name) is None


# ------------------------------------------------------------------- precedence
def test_make_test_wins_over_pytest(tmp_path: Path) -> None:
    write(tmp_path, "Makefile", "test:\n\tpytest\n")
    write(tmp_path, "pytest.ini", "[pytest]\n")
    assert detected(tmp_path) == (["make", "test"], "Makefile target test")


def test_makefile_without_test_target_falls_through_to_pytest(tmp_path: Path) -> None:
    write(tmp_path, "Makefile", "build:\n\t@true\n")
    write(tmp_path, "pytest.ini", "[pytest]\n")
    assert detected(tmp_path) == (PYTEST, "pytest configuration in pytest.ini")


def test_python_project_tests_win_over_npm(tmp_path: Path) -> None:
    write(tmp_path, "tests/test_x.py", "")
    write(tmp_path, "package.json", json.dumps({"scripts": {"test": "jest"}}))
    assert detected(tmp_path) == (PYTEST, "Python test files in tests/ (1 file)")


@pytest.mark.parametrize(("build_file", "content", "argv"), [
    ("package.json", json.dumps({"scripts": {"test": "jest"}}), ["npm", "test"]),
    ("go.mod", "module x\n", ["go", "test", "./..."]),
    ("Cargo.toml", "[package]\n", ["cargo", "test"]),
    ("pom.xml", "<project/>", ["mvn", "-q", "test"]),
])
def test_a_stray_python_test_deep_in_another_ecosystem_comes_after_its_own_command(
        tmp_path: Path, build_file: str, content: str, argv: list[str]) -> None:
    write(tmp_path, build_file, content)
    write(tmp_path, "tools/gyp/test_gyp.py", "def test_x(): pass\n")
    command = detect_test_command(tmp_path)
    assert command is not None and command.argv == argv


def test_stray_python_tests_are_still_found_when_nothing_else_is(tmp_path: Path) -> None:
    write(tmp_path, "README.md", "# x\n")
    write(tmp_path, "tools/gyp/test_gyp.py", "def test_x(): pass\n")
    assert detected(tmp_path) == (PYTEST, "Python test files in tools/gyp/ (1 file)")


def test_a_python_marker_makes_deep_tests_win_over_npm(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[project]\nname = 'x'\n")
    write(tmp_path, "package.json", json.dumps({"scripts": {"test": "jest"}}))
    write(tmp_path, "src/pkg/tests/test_x.py", "def test_x(): pass\n")
    assert detected(tmp_path) == (PYTEST, "Python test files in src/pkg/tests/ (1 file)")


def test_npm_wins_over_gradle(tmp_path: Path) -> None:
    write(tmp_path, "package.json", json.dumps({"scripts": {"test": "jest"}}))
    write(tmp_path, "gradlew", "#!/bin/sh\n")
    assert detected(tmp_path) == (["npm", "test"], "package.json scripts.test")


def test_gradle_wins_over_maven(tmp_path: Path) -> None:
    write(tmp_path, "build.gradle", "")
    write(tmp_path, "pom.xml", "<project/>")
    assert detected(tmp_path) == (["gradle", "test"], "build.gradle")


def test_maven_wins_over_go(tmp_path: Path) -> None:
    write(tmp_path, "pom.xml", "<project/>")
    write(tmp_path, "go.mod", "module x\n")
    assert detected(tmp_path) == (["mvn", "-q", "test"], "pom.xml")


def test_go_wins_over_cargo(tmp_path: Path) -> None:
    write(tmp_path, "go.mod", "module x\n")
    write(tmp_path, "Cargo.toml", "[package]\n")
    assert detected(tmp_path) == (["go", "test", "./..."], "go.mod")


# ------------------------------------------------------------------ environment
def test_environment_string_is_a_shell_command() -> None:
    command = command_from_environment({"namespace": "env-x", "testCommand": "npm run test:unit -- --ci"})
    assert command == TestCommand(shell="npm run test:unit -- --ci", source="request environment")


def test_environment_list_is_an_argv() -> None:
    command = command_from_environment({"testCommand": ["./gradlew", "check"]})
    assert command == TestCommand(argv=["./gradlew", "check"], source="request environment")


def test_environment_snake_case_key_is_accepted() -> None:
    assert command_from_environment({"test_command": "make check"}) == TestCommand(
        shell="make check", source="request environment")


def test_environment_camel_case_key_wins_over_snake_case() -> None:
    command = command_from_environment({"test_command": "make check", "testCommand": "make test"})
    assert command is not None and command.shell == "make test"


@pytest.mark.parametrize("value", [None, "", "   ", [], [""], ["make", 1], 42, True, {"run": "make test"}])
def test_environment_without_a_usable_test_command_gives_nothing(value: Any) -> None:
    assert command_from_environment({"testCommand": value}) is None


@pytest.mark.parametrize("environment", [None, {}, ["testCommand", "make test"], "make test"])
def test_missing_or_malformed_environment_gives_nothing(environment: Any) -> None:
    assert command_from_environment(environment) is None


def test_resolve_prefers_the_environment_over_detection(tmp_path: Path) -> None:
    write(tmp_path, "Makefile", "test:\n\t@true\n")
    command = resolve_test_command({"testCommand": "make integration-test"}, tmp_path)
    assert command == TestCommand(shell="make integration-test", source="request environment")


def test_resolve_falls_back_to_detection(tmp_path: Path) -> None:
    write(tmp_path, "Makefile", "test:\n\t@true\n")
    command = resolve_test_command({"testCommand": ""}, tmp_path)
    assert command == TestCommand(argv=["make", "test"], source="Makefile target test")


def test_resolve_without_environment_or_signal_gives_nothing(tmp_path: Path) -> None:
    assert resolve_test_command(None, tmp_path) is None


# -------------------------------------------------------------------- odd files
def test_invalid_package_json_is_no_signal(tmp_path: Path) -> None:
    write(tmp_path, "package.json", '{"scripts": {"test": "jest",}')
    write(tmp_path, "go.mod", "module x\n")
    assert detected(tmp_path) == (["go", "test", "./..."], "go.mod")


def test_deeply_nested_package_json_is_no_signal(tmp_path: Path) -> None:
    write(tmp_path, "package.json", "[" * 100_000 + "]" * 100_000)
    assert detect_test_command(tmp_path) is None


@pytest.mark.parametrize("content", [
    "[tool.pytest.ini_options\naddopts = '-q'\n",  # not TOML
    b"\x00\xff\xfe[tool.pytest.ini_options]\x00",  # binary
    "a = " + "[" * 100_000 + "]" * 100_000,  # nesting deeper than the parser's recursion
])
def test_unparsable_pyproject_is_no_signal(tmp_path: Path, content: str | bytes) -> None:
    write(tmp_path, "pyproject.toml", content)
    assert detect_test_command(tmp_path) is None


def test_binary_makefile_is_no_signal(tmp_path: Path) -> None:
    write(tmp_path, "Makefile", bytes(range(256)) * 16)
    assert detect_test_command(tmp_path) is None


def test_makefile_too_large_to_be_one_is_not_read(tmp_path: Path) -> None:
    write(tmp_path, "Makefile", "# filler\n" * (MAX_FILE_BYTES // 9 + 1) + "test:\n\t@true\n")
    assert detect_test_command(tmp_path) is None


def test_non_utf8_setup_cfg_still_gives_its_pytest_section(tmp_path: Path) -> None:
    write(tmp_path, "setup.cfg", "[metadata]\nauthor = Jos\xe9\n[tool:pytest]\n".encode("latin-1"))
    assert detected(tmp_path) == (PYTEST, "pytest configuration in setup.cfg")


@pytest.mark.parametrize("name", ["Makefile", "package.json", "pyproject.toml", "go.mod"])
def test_build_file_that_is_a_directory_is_no_signal(tmp_path: Path, name: str) -> None:
    (tmp_path / name).mkdir()
    assert detect_test_command(tmp_path) is None


def test_build_file_that_is_a_fifo_is_not_read(tmp_path: Path) -> None:
    """Reading a FIFO would block until someone writes to it."""
    os.mkfifo(tmp_path / "Makefile")
    os.mkfifo(tmp_path / "package.json")
    assert detect_test_command(tmp_path) is None


@pytest.mark.parametrize("target", ["/nonexistent/Makefile", "Makefile"])  # dangling, and a loop to itself
def test_build_file_that_is_a_bad_symlink_is_no_signal(tmp_path: Path, target: str) -> None:
    (tmp_path / "Makefile").symlink_to(target)
    assert detect_test_command(tmp_path) is None


def test_tests_entry_that_is_a_file_is_no_signal(tmp_path: Path) -> None:
    write(tmp_path, "tests", "test_x.py\n")
    assert detect_test_command(tmp_path) is None


def test_a_build_file_that_is_a_symlink_is_not_read(tmp_path: Path) -> None:
    """An agent's link in place of package.json (to a file the sandbox hid) gives no command: the
    service would otherwise read the target outside the sandbox."""
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"name": "x", "scripts": {"test": "jest --ci"}}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "package.json").symlink_to(outside)
    assert detected(workspace) is None
