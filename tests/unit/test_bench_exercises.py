"""The benchmark's exercises (bench/exercises): every stub fails its tests and its reference solution
passes them, only the stub and the tests reach a workspace, and the request names what to implement."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.exercises import Exercise, load_exercises

EXERCISES = load_exercises()
each_exercise = pytest.mark.parametrize("exercise", EXERCISES, ids=[exercise.slug for exercise in EXERCISES])


def run_tests(exercise: Exercise, folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "unittest", f"test_{exercise.module}"], cwd=folder,
                          capture_output=True, text=True, timeout=30, check=False)


def ran_count(output: str) -> int:
    found = re.search(r"^Ran (\d+) tests? in ", output, re.MULTILINE)
    assert found, output
    return int(found.group(1))


def public_names(source: str) -> list[str]:
    return [node.name for node in ast.parse(source).body
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_")]


def is_stub_body(body: list[ast.stmt]) -> bool:
    """A docstring, then `raise NotImplementedError` and nothing else."""
    first, *rest = body
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
        first.value.value, str)
    return docstring and [ast.unparse(node) for node in rest] in (
        ["raise NotImplementedError"], ["raise NotImplementedError()"])


def test_twelve_exercises_sorted_by_slug_each_named_after_its_module() -> None:
    slugs = [exercise.slug for exercise in EXERCISES]
    assert len(slugs) == 12 and slugs == sorted(slugs)
    for exercise in EXERCISES:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", exercise.slug)
        assert (exercise.module, exercise.stub_file, exercise.test_file) == (
            exercise.slug, f"{exercise.slug}.py", f"test_{exercise.slug}.py")
        assert exercise.test_command() == ["python3", "-m", "unittest", f"test_{exercise.slug}"]


@each_exercise
def test_the_folder_holds_the_stub_the_tests_the_instructions_and_the_solution_only(exercise: Exercise) -> None:
    files = {path.relative_to(exercise.folder).as_posix() for path in exercise.folder.rglob("*")
             if path.is_file() and "__pycache__" not in path.parts}
    assert files == {exercise.stub_file, exercise.test_file, "instructions.md", ".meta/solution.py"}


@each_exercise
def test_the_stub_holds_only_imports_signatures_docstrings_and_raise_not_implemented(exercise: Exercise) -> None:
    tree = ast.parse((exercise.folder / exercise.stub_file).read_text(encoding="utf-8"))
    assert public_names(ast.unparse(tree))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            assert is_stub_body(node.body), node.name
        elif isinstance(node, ast.ClassDef):
            methods = [member for member in node.body if isinstance(member, ast.FunctionDef)]
            assert methods and all(is_stub_body(method.body) for method in methods), node.name
        else:
            assert isinstance(node, ast.Import | ast.ImportFrom), ast.unparse(node)


@each_exercise
def test_the_stub_fails_every_one_of_its_five_to_twelve_tests(exercise: Exercise, tmp_path: Path) -> None:
    exercise.copy_to(tmp_path)
    result = run_tests(exercise, tmp_path)
    count = ran_count(result.stderr)
    assert result.returncode != 0 and 5 <= count <= 12
    assert f"FAILED (errors={count})" in result.stderr and "NotImplementedError" in result.stderr, result.stderr


@each_exercise
def test_the_reference_solution_passes_the_tests(exercise: Exercise, tmp_path: Path) -> None:
    exercise.copy_to(tmp_path)
    shutil.copyfile(exercise.solution_file, tmp_path / exercise.stub_file)
    result = run_tests(exercise, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.rstrip().endswith("OK") and ran_count(result.stderr) >= 5


@each_exercise
def test_copy_to_copies_only_the_stub_and_the_test_file(exercise: Exercise, tmp_path: Path) -> None:
    target = tmp_path / "workspace" / exercise.slug  # created, parents too
    exercise.copy_to(target)
    assert sorted(path.name for path in target.iterdir()) == sorted([exercise.stub_file, exercise.test_file])
    for name in (exercise.stub_file, exercise.test_file):
        assert (target / name).read_bytes() == (exercise.folder / name).read_bytes()
    exercise.copy_to(target)  # into an existing folder too
    assert len(list(target.iterdir())) == 2


@each_exercise
def test_the_request_names_the_stub_the_test_file_and_every_public_function(exercise: Exercise) -> None:
    request = exercise.request()
    names = public_names((exercise.folder / exercise.stub_file).read_text(encoding="utf-8"))
    assert names and exercise.public_names() == names
    head = request.split("\n\n", 1)[0]
    for name in names:
        assert f"{name}()" in head
    assert f" in {exercise.stub_file} as described below, so that the tests in {exercise.test_file} pass. " in head
    assert head.endswith(f"Do not change {exercise.test_file}.")
    assert request.endswith(exercise.instructions)


@each_exercise
def test_the_instructions_are_a_page_naming_every_function_and_every_expected_error_message(
        exercise: Exercise) -> None:
    lines = exercise.instructions.splitlines()
    assert 10 <= len(lines) <= 40
    for name in exercise.public_names():
        assert f"`{name}(" in exercise.instructions, name
    tests = (exercise.folder / exercise.test_file).read_text(encoding="utf-8")
    for message in re.findall(r'str\(err\.exception\), "([^"]+)"', tests):
        assert f'"{message}"' in exercise.instructions, message


def test_the_request_lists_two_functions_in_source_order_with_the_exact_wording() -> None:
    exercise = next(exercise for exercise in EXERCISES if exercise.slug == "run_length_encoding")
    assert exercise.request() == (
        "Implement encode(), decode() in run_length_encoding.py as described below, so that the tests in "
        "test_run_length_encoding.py pass. Do not change test_run_length_encoding.py.\n\n" + exercise.instructions)


def test_three_exercises_hinge_on_exact_strings_quoted_in_their_instructions() -> None:
    exact = {"collatz_conjecture": ["Only positive integers are allowed"],
             "hamming": ["Strands must be of equal length"],
             "bob": ["Sure.", "Whoa, chill out!", "Calm down, I know what I'm doing!", "Fine. Be that way!",
                     "Whatever."]}
    by_slug = {exercise.slug: exercise for exercise in EXERCISES}
    for slug, strings in exact.items():
        tests = (by_slug[slug].folder / by_slug[slug].test_file).read_text(encoding="utf-8")
        for text in strings:
            assert f'"{text}"' in tests and f'"{text}"' in by_slug[slug].instructions, (slug, text)


def test_a_class_is_named_without_parentheses_and_private_names_are_left_out(tmp_path: Path) -> None:
    folder = tmp_path / "shapes"
    (folder / ".meta").mkdir(parents=True)
    stub = 'class Circle:\n    """A circle."""\n\n\ndef _helper() -> None: ...\n\n\ndef area() -> float: ...\n'
    (folder / "shapes.py").write_text(stub)
    (folder / ".meta" / "solution.py").write_text(stub)
    (folder / "test_shapes.py").write_text("")
    (folder / "instructions.md").write_text("# Shapes\n")
    (tmp_path / "__pycache__").mkdir()  # not an exercise
    [exercise] = load_exercises(tmp_path)
    assert exercise.request().startswith("Implement Circle, area() in shapes.py as described below")
    assert exercise.request().endswith("Do not change test_shapes.py.\n\n# Shapes\n")


def test_an_exercise_folder_missing_a_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "half.py").write_text("")
    with pytest.raises(FileNotFoundError, match=r"test_half\.py, instructions\.md, \.meta/solution\.py"):
        load_exercises(tmp_path)
