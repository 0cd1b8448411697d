"""The benchmark's exercises (bench/exercises): the twelve and the 30 drawn from the exercism Python
track load in their two layouts, carry the track's MIT licence, every stub fails its tests and every
reference solution passes them, only the workspace files reach a workspace, and the request is the
instructions followed by Aider's benchmark prompt."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import exercism
from bench.aider_prompts import instructions_addendum, test_failures
from bench.exercises import ROOT, Exercise, load_exercises

EXERCISES = load_exercises()
TWELVE = [exercise for exercise in EXERCISES if exercise.layout == "bench"]
TRACK = [exercise for exercise in EXERCISES if exercise.layout == "exercism"]
MANIFEST = json.loads((ROOT / "exercism" / exercism.MANIFEST).read_text(encoding="utf-8"))
EXERCISM_COMMIT = "9eb657d4507d91efef99f484e7f2a1f4074911b5"
DRAWN = ["affine-cipher", "all-your-base", "atbash-cipher", "binary", "book-store", "bowling", "crypto-square",
         "custom-set", "diamond", "difference-of-squares", "error-handling", "etl", "flatten-array", "go-counting",
         "high-scores", "house", "knapsack", "leap", "matrix", "meetup", "pangram", "relative-distance", "rest-api",
         "rna-transcription", "sgf-parsing", "state-of-tic-tac-toe", "tree-building", "variable-length-quantity",
         "word-count", "yacht"]
each_exercise = pytest.mark.parametrize("exercise", EXERCISES, ids=[exercise.name for exercise in EXERCISES])
each_of_twelve = pytest.mark.parametrize("exercise", TWELVE, ids=[exercise.name for exercise in TWELVE])

#: Runs many exercises' unittest files in one interpreter (one start-up instead of 84): each in a
#: fresh folder holding its workspace files, the stub replaced by the given source.
RUNNER = r"""
import io, json, os, shutil, sys, tempfile, unittest
results = []
for job in json.loads(sys.stdin.read()):
    folder = tempfile.mkdtemp()
    for source, name in job["files"]:
        shutil.copyfile(source, os.path.join(folder, name))
    with open(os.path.join(folder, job["stub"]), "w", encoding="utf-8") as handle:
        handle.write(job["code"])
    for module in job["modules"]:
        sys.modules.pop(module, None)
    sys.path.insert(0, folder)
    os.chdir(folder)
    stream = io.StringIO()
    suite = unittest.defaultTestLoader.loadTestsFromName(job["tests"])
    result = unittest.TextTestRunner(stream=stream, verbosity=0).run(suite)
    results.append({"ran": result.testsRun, "failures": len(result.failures), "errors": len(result.errors),
                    "skipped": len(result.skipped), "output": stream.getvalue()[-3000:]})
    sys.path.remove(folder)
    os.chdir("/")
    shutil.rmtree(folder)
print(json.dumps(results))
"""


def run_all(code_of: dict[str, str]) -> dict[str, dict[str, Any]]:
    jobs = [{"files": [[str(e.folder / name), name] for name in e.workspace_files], "stub": e.stub_file,
             "code": code_of[e.name], "tests": Path(e.test_file).stem,
             "modules": [Path(name).stem for name in e.workspace_files]} for e in EXERCISES]
    done = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(jobs), capture_output=True, text=True,
                          timeout=120, check=True)
    return dict(zip([e.name for e in EXERCISES], json.loads(done.stdout), strict=True))


@pytest.fixture(scope="module")
def stub_results() -> dict[str, dict[str, Any]]:
    return run_all({e.name: (e.folder / e.stub_file).read_text(encoding="utf-8") for e in EXERCISES})


@pytest.fixture(scope="module")
def solution_results() -> dict[str, dict[str, Any]]:
    return run_all({e.name: e.solution_file.read_text(encoding="utf-8") for e in EXERCISES})


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


# ------------------------------------------------------------------------ the set and the draw
def test_twelve_then_thirty_drawn_each_sorted_and_named_uniquely() -> None:
    assert [e.slug for e in TWELVE] == sorted(e.slug for e in TWELVE) and len(TWELVE) == 12
    assert [e.slug for e in TRACK] == DRAWN
    assert [e.name for e in EXERCISES] == [e.slug for e in TWELVE] + [f"exercism/{slug}" for slug in DRAWN]
    for exercise in TWELVE:
        assert (exercise.module, exercise.stub_file, exercise.test_file) == (
            exercise.slug, f"{exercise.slug}.py", f"test_{exercise.slug}.py")
    for exercise in TRACK:  # the track's own names: armstrong-numbers -> armstrong_numbers.py, _test.py
        module = exercise.slug.replace("-", "_")
        assert (exercise.stub_file, exercise.test_file) == (f"{module}.py", f"{module}_test.py")
        assert exercise.solution_file == exercise.folder / ".meta" / "example.py"


def test_the_draw_is_the_seeded_sample_of_the_whole_track_at_the_recorded_commit() -> None:
    assert (MANIFEST["commit"], MANIFEST["seed"], MANIFEST["count"]) == (EXERCISM_COMMIT, 31, 30)
    assert len(MANIFEST["slugs"]) == 140 and MANIFEST["slugs"] == sorted(MANIFEST["slugs"])
    assert {"hello-world", "zipper", "two-fer"} <= set(MANIFEST["slugs"])  # nothing left out before the draw
    drawn = exercism.draw(MANIFEST["slugs"])
    assert drawn == MANIFEST["drawn"] and sorted(drawn) == DRAWN
    assert drawn[:3] == ["all-your-base", "state-of-tic-tac-toe", "diamond"]  # random.Random(31)'s own order
    assert exercism.draw(list(reversed(MANIFEST["slugs"]))) == drawn  # sorted before sampling
    assert exercism.draw(MANIFEST["slugs"], seed=32) != drawn


@each_exercise
def test_the_tracks_mit_licence_sits_beside_every_exercise(exercise: Exercise) -> None:
    licence = (exercise.folder / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License\n\nCopyright (c) 2021 Exercism\n")
    assert "The above copyright notice and this permission notice shall be included" in licence
    assert licence == (ROOT / "exercism" / "LICENSE").read_text(encoding="utf-8")


def test_the_readme_says_where_the_exercises_and_the_copied_prompt_come_from() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert EXERCISM_COMMIT in readme and "MIT" in readme and "random.Random(31).sample(sorted(slugs), 30)" in readme
    aider_licence = (ROOT.parent / "LICENSE.aider.txt").read_text(encoding="utf-8")
    assert "Apache License" in aider_licence and "Version 2.0, January 2004" in aider_licence
    assert "Apache License, Version 2.0" in (ROOT.parent / "aider_prompts.py").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------ the layouts
@each_of_twelve
def test_a_folder_of_the_twelve_holds_stub_tests_instructions_solution_and_licence(exercise: Exercise) -> None:
    files = {path.relative_to(exercise.folder).as_posix() for path in exercise.folder.rglob("*")
             if path.is_file() and "__pycache__" not in path.parts}
    assert files == {exercise.stub_file, exercise.test_file, "instructions.md", ".meta/solution.py", "LICENSE"}


@each_of_twelve
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


def test_an_exercism_folder_is_the_tracks_files_its_config_names() -> None:
    for exercise in TRACK:
        config = json.loads((exercise.folder / ".meta" / "config.json").read_text(encoding="utf-8"))["files"]
        assert (config["solution"], config["test"], config["example"]) == (
            [exercise.stub_file], [exercise.test_file], [".meta/example.py"])
        tests = (exercise.folder / exercise.test_file).read_text(encoding="utf-8")
        assert re.search(rf"^(from {exercise.module} import|import {exercise.module}\b)", tests, re.MULTILINE)
        top = {path.name for path in exercise.folder.iterdir() if path.is_file()}
        assert top == {exercise.stub_file, exercise.test_file, "LICENSE", *exercise.support_files}
    by_slug = {e.slug: e for e in TRACK}
    assert by_slug["error-handling"].support_files == ("test_utils.py",)
    assert [e.slug for e in TRACK if e.support_files] == ["error-handling"]


# ----------------------------------------------------------------- stubs fail, solutions pass
@each_exercise
def test_the_stub_fails_its_tests(exercise: Exercise, stub_results: dict[str, dict[str, Any]]) -> None:
    result = stub_results[exercise.name]
    assert result["ran"] >= 1 and result["failures"] + result["errors"] >= 1, result["output"]
    if exercise.layout == "bench":  # the twelve: every one of five to twelve tests raises NotImplementedError
        assert 5 <= result["ran"] <= 12 and result["errors"] == result["ran"], result["output"]
        assert "NotImplementedError" in result["output"]


@each_exercise
def test_the_reference_solution_passes_the_tests(exercise: Exercise,
                                                 solution_results: dict[str, dict[str, Any]]) -> None:
    result = solution_results[exercise.name]
    assert result["ran"] >= 4 and result["failures"] == result["errors"] == result["skipped"] == 0, result["output"]


# -------------------------------------------------------------------- workspace and request
@each_exercise
def test_copy_to_copies_only_the_workspace_files(exercise: Exercise, tmp_path: Path) -> None:
    target = tmp_path / "workspace" / exercise.slug  # created, parents too
    exercise.copy_to(target)
    assert sorted(path.name for path in target.iterdir()) == sorted(exercise.workspace_files)
    assert exercise.workspace_files[:2] == (exercise.stub_file, exercise.test_file)
    for name in exercise.workspace_files:
        assert (target / name).read_bytes() == (exercise.folder / name).read_bytes()
    exercise.copy_to(target)  # into an existing folder too
    assert len(list(target.iterdir())) == len(exercise.workspace_files)


@each_exercise
def test_the_request_is_the_instructions_then_aiders_addendum_naming_the_stub(exercise: Exercise) -> None:
    request = exercise.request()
    assert request == exercise.instructions + instructions_addendum.format(file_list=exercise.stub_file)
    assert request.endswith(
        f"\n####\n\nUse the above instructions to modify the supplied files: {exercise.stub_file}\n"
        "Don't change the names of existing functions or classes, as they may be referenced from other code "
        "like unit tests, etc.\nOnly use standard libraries, don't suggest installing any packages.\n")
    assert exercise.test_file not in request.removesuffix(exercise.instructions)


def test_aiders_prompts_are_its_text() -> None:
    assert instructions_addendum.startswith("\n####\n\nUse the above instructions to modify the supplied files:")
    assert test_failures == ("\n####\n\nSee the testing errors above.\nThe tests are correct, don't try and change "
                             "them.\nFix the code in {file_list} to resolve the errors.\n")


def test_exercism_instructions_are_introduction_instructions_and_append_as_aiders_benchmark_reads_them() -> None:
    exercise = next(e for e in TRACK if e.slug == "all-your-base")
    docs = exercise.folder / ".docs"
    parts = [(docs / name).read_text(encoding="utf-8")
             for name in ("introduction.md", "instructions.md", "instructions.append.md")]
    assert all(parts) and exercise.instructions == "".join(parts)
    atbash = next(e for e in TRACK if e.slug == "atbash-cipher")  # instructions.md only
    assert atbash.instructions == (atbash.folder / ".docs" / "instructions.md").read_text(encoding="utf-8")


@each_of_twelve
def test_the_instructions_are_a_page_naming_every_function_and_every_expected_error_message(
        exercise: Exercise) -> None:
    lines = exercise.instructions.splitlines()
    assert 10 <= len(lines) <= 40
    for name in exercise.public_names():
        assert f"`{name}(" in exercise.instructions, name
    tests = (exercise.folder / exercise.test_file).read_text(encoding="utf-8")
    for message in re.findall(r'str\(err\.exception\), "([^"]+)"', tests):
        assert f'"{message}"' in exercise.instructions, message


# ---------------------------------------------------------------------------------- loader
def write_exercism(root: Path, slug: str, files: dict[str, str]) -> Path:
    folder = root / "exercism" / slug
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def test_both_layouts_load_from_one_root_and_public_names_skip_private_ones(tmp_path: Path) -> None:
    folder = tmp_path / "shapes"
    (folder / ".meta").mkdir(parents=True)
    stub = 'class Circle:\n    """A circle."""\n\n\ndef _helper() -> None: ...\n\n\ndef area() -> float: ...\n'
    for name, text in {"shapes.py": stub, ".meta/solution.py": stub, "test_shapes.py": "", "instructions.md": "# S\n",
                       "LICENSE": "MIT"}.items():
        (folder / name).write_text(text)
    (tmp_path / "__pycache__").mkdir()  # not an exercise
    config = {"files": {"solution": ["two_fer.py"], "test": ["two_fer_test.py"], "example": [".meta/example.py"]}}
    write_exercism(tmp_path, "two-fer", {".meta/config.json": json.dumps(config), ".meta/example.py": "", "LICENSE": "",
                                         "two_fer.py": "def two_fer(name):\n    pass\n", "two_fer_test.py": "",
                                         "helpers.py": "", ".docs/introduction.md": "Intro.\n",
                                         ".docs/instructions.md": "Do it.\n"})
    shapes, two_fer = load_exercises(tmp_path)
    assert (shapes.name, shapes.layout, shapes.public_names()) == ("shapes", "bench", ["Circle", "area"])
    assert (two_fer.name, two_fer.layout, two_fer.module) == ("exercism/two-fer", "exercism", "two_fer")
    assert two_fer.support_files == ("helpers.py",) and two_fer.instructions == "Intro.\nDo it.\n"
    assert two_fer.request().startswith("Intro.\nDo it.\n\n####\n\nUse the above instructions to modify the "
                                        "supplied files: two_fer.py\n")


def test_an_exercise_missing_a_file_or_with_two_stubs_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "half.py").write_text("")
    with pytest.raises(FileNotFoundError, match=r"test_half\.py, instructions\.md, \.meta/solution\.py, LICENSE"):
        load_exercises(tmp_path)
    other = tmp_path / "other"
    config = {"files": {"solution": ["a.py", "b.py"], "test": ["a_test.py"], "example": [".meta/example.py"]}}
    write_exercism(other, "two", {".meta/config.json": json.dumps(config), "LICENSE": "",
                                  ".docs/instructions.md": ""})
    with pytest.raises(ValueError, match="one stub"):
        load_exercises(other)
    write_exercism(other, "two", {".meta/config.json": json.dumps(config | {"files": config["files"] | {
        "solution": ["a.py"]}})})
    with pytest.raises(FileNotFoundError, match=r"lacks a\.py, a_test\.py, \.meta/example\.py"):
        load_exercises(other)
