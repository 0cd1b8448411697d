"""Did the agent's edit keep the files whole? Checks that need no project tooling.

A small model with Aider's whole-file format fails in recognisable ways: it rewrites a file and
drops functions nobody asked it to touch, leaves Python that no longer parses, or turns a line of
its answer into a file name ("2. Add the following code to the end of the file"). Each is caught
here from the step's base (the workspace snapshot) and the file now, and fails the step with
feedback the reflection and the retry read. Anything the instructions name may go: "remove add()"
removes add.

Two ways of passing without doing the work are caught as well: an existing test file edited (or
deleted) when the words never asked for tests to change (tests are what judge the step), and a
created file nobody asked for whose path is a format example (`path/to/filename.js`, which Aider's
own prompt shows and a small model copies).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from app.graph.intent import asks_for_test_change
from app.graph.request_scope import is_test_file
from app.texts import Texts

#: Larger files are not read (a generated or data file, not an agent's edit of source).
MAX_BYTES = 1_000_000
#: A created path whose file name reads like a sentence: three or more words.
_SENTENCE_NAME = re.compile(r"\S+\s+\S+\s+\S+")
#: File names of format examples (Aider's own prompt shows `path/to/filename.js`).
_PLACEHOLDER_STEMS = frozenset({"filename", "file_name", "yourfile", "your_file", "newfile", "new_file", "myfile",
                                "my_file", "example_file", "some_file", "somefile", "file", "path"})
_PLACEHOLDER_MARKS = re.compile(r"[<>{}]|\.\.\.|…")


@dataclass(frozen=True)
class ChangedFile:
    path: str
    before: str | None
    """Content in the step's base; None for a file the step created."""
    after: str | None
    """Content now; None for a file the step deleted."""


def judged(path: str) -> bool:
    """Whether a changed path can fail the check at all (Python source, a test, a sentence-like or
    placeholder name); the others need not be read."""
    return (path.endswith(".py") or is_test_file(path) or looks_like_placeholder(path)
            or bool(_SENTENCE_NAME.search(path.rsplit("/", 1)[-1])))


def looks_like_placeholder(path: str) -> bool:
    """`path/to/…`, `filename.js`, `<file>.py`: a path copied from an example of an edit format."""
    pure = PurePosixPath(path)
    return ("path/to/" in f"{path}/" or pure.stem.lower() in _PLACEHOLDER_STEMS
            or bool(_PLACEHOLDER_MARKS.search(path)))


def problems(files: list[ChangedFile], instructions: str, named: list[str], t: Texts) -> list[str]:
    """What is wrong with the changed files, as feedback lines (empty: nothing found)."""
    found: list[str] = []
    asked_tests = asks_for_test_change(instructions)
    changed_tests = [f.path for f in files if f.before is not None and is_test_file(f.path) and f.after != f.before]
    if changed_tests and not asked_tests:
        found.append(t.check_tests_changed.format(files=", ".join(changed_tests)))
    for file in files:
        name = file.path.rsplit("/", 1)[-1]
        unasked = file.path not in named and name not in instructions
        if file.before is None and _SENTENCE_NAME.search(name) and file.path not in named:
            found.append(t.check_sentence_file.format(path=file.path))
            continue
        example_dir = "path/to/" in f"{file.path}/" and file.path not in named and file.path not in instructions
        if file.before is None and (example_dir or (unasked and looks_like_placeholder(file.path))):
            found.append(t.check_placeholder_file.format(path=file.path))
            continue
        if not file.path.endswith(".py") or file.after is None:
            continue
        try:
            after = ast.parse(file.after)
        except SyntaxError as exc:
            found.append(t.check_syntax.format(path=file.path, line=exc.lineno or 0, error=exc.msg))
            continue
        if file.before is None:
            continue
        lost = [n for n in _top_level_names(file.before) - _top_level_names(after) if n not in instructions]
        if lost:
            found.append(t.check_lost_definitions.format(path=file.path, names=", ".join(sorted(lost))))
    return found


def _top_level_names(source: str | ast.Module) -> set[str]:
    """Functions and classes defined at the top of a module (an unparsable base has none)."""
    if isinstance(source, str):
        try:
            source = ast.parse(source)
        except SyntaxError:
            return set()
    return {node.name for node in source.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
