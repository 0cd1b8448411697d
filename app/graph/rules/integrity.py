"""Did the agent's edit keep the files whole? Checks that need no project tooling.

A small model with Aider's whole-file format fails in recognisable ways: it rewrites a file and
drops functions nobody asked it to touch, leaves Python that no longer parses, or turns a line of
its answer into a file name ("2. Add the following code to the end of the file"). Each is caught
here from the step's base (the workspace snapshot) and the file now, and fails the step with
feedback the reflection and the retry read. A definition may go only where the words ask for it:
a sentence naming it with a verb that removes, renames, replaces or moves ("remove add()",
"přejmenuj score na points"); a name merely mentioned ("the score is …") must stay, and so must
every name when the request says to keep the names ("don't change the names of existing
functions", the wording of exercise sets). A renamed `score` breaks every `from darts import score`.

Two ways of passing without doing the work are caught as well: an existing test file edited (or
deleted) when the words never asked for tests to change (tests are what judge the step), and a
created file nobody asked for whose path is a format example (`path/to/filename.js`, which Aider's
own prompt shows and a small model copies).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from app.graph.rules.intent import asks_for_test_change
from app.graph.rules.request_scope import is_test_file
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
        gone = _top_level_names(file.before) - _top_level_names(after)
        lost = [n for n in gone if not asks_to_remove(n, instructions)]
        if lost:
            found.append(t.check_lost_definitions.format(path=file.path, names=", ".join(sorted(lost))))
    return found


#: Verbs that make a definition go: remove, rename, replace, move (English and Czech stems).
_REMOVING = re.compile(
    r"\b(?:remov|delet|drop|renam|replac|get\s+rid|mov|merg|inlin|split|odstra|smaž|smaz|vymaž|vymaz|zruš|zrus"
    r"|přejmen|prejmen|nahra[dď]|přesu|presu|slouč|slouc)", re.IGNORECASE)
#: "Don't change the names of existing functions", "keep the names", "neměň názvy": nothing may go.
_KEEP_NAMES = re.compile(
    r"(?:do\s*n[o']t|never)\s+(?:change|rename|modify)\s+(?:the\s+)?names|keep\s+(?:the\s+|all\s+)?"
    r"(?:existing\s+)?(?:function\s+)?names|nem[eě][nň]\w*\s+(?:jejich\s+)?n[aá]zv|zachovej\w*\s+n[aá]zv",
    re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")


def asks_to_remove(name: str, instructions: str) -> bool:
    """Whether the words ask for the definition `name` to go: a sentence naming it (as a word) with
    a removing verb, and no request to keep the names."""
    if _KEEP_NAMES.search(instructions):
        return False
    word = re.compile(rf"(?<![\w.]){re.escape(name)}\b")
    return any(word.search(sentence) and _REMOVING.search(sentence) for sentence in _SENTENCE_END.split(instructions))


def broken_imports(files: list[ChangedFile], importers: Mapping[str, str], t: Texts) -> list[str]:
    """Names other modules import from a changed Python file that it no longer defines (a test's
    `from darts import score` after `score` became `calculate_score`): the code no longer imports.
    `importers` maps workspace paths to their sources as they are now."""
    found: list[str] = []
    for file in files:
        if not file.path.endswith(".py") or file.after is None or file.before is None:
            continue
        try:
            defined = _module_level_names(ast.parse(file.after))
        except SyntaxError:
            continue  # said by the syntax check
        if defined is None:
            continue  # a star import or a module __getattr__: what it defines cannot be told
        for importer, source in importers.items():
            modules = _import_names(file.path, importer)
            missing = sorted(_imported_from(source, modules) - defined) if importer != file.path else []
            if missing:
                found.append(t.check_broken_import.format(importer=importer, names=", ".join(missing), path=file.path))
    return found


def _import_names(path: str, importer: str) -> set[str]:
    """The names under which `importer` reaches the module at `path`: its dotted path from the root
    (or from `src/`), and its bare name from a file beside it (the folder on `sys.path`). A bare
    `utils` elsewhere may well be another `utils.py`."""
    pure, beside = PurePosixPath(path), PurePosixPath(importer).parent == PurePosixPath(path).parent
    parts = list(pure.with_suffix("").parts)
    names = {".".join(parts), ".".join(parts[1:]) if parts[0] == "src" and len(parts) > 1 else ".".join(parts)}
    return names | ({pure.stem} if beside else set())


def _imported_from(source: str, modules: set[str]) -> set[str]:
    """The names `from <module> import …` takes from any of `modules` (absolute imports only)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and not node.level
            and node.module in modules for alias in node.names if alias.name != "*"}


def _module_level_names(tree: ast.Module) -> set[str] | None:
    """Every name a module binds at its top level (inside if/try/with/for blocks too); None when
    that cannot be known statically (a star import, a module `__getattr__`)."""
    names: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == "__getattr__":
                return None
            names.add(node.name)
            continue  # what a function or class binds inside is not the module's
        if isinstance(node, ast.Import | ast.ImportFrom):
            if any(alias.name == "*" for alias in node.names):
                return None
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            continue
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For):
            targets = [node.target]
        elif isinstance(node, ast.With):
            targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
        names.update(n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name))
        if isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While | ast.ExceptHandler):
            for field in ("body", "orelse", "finalbody", "handlers"):
                pending.extend(getattr(node, field, None) or [])
    return names


def _top_level_names(source: str | ast.Module) -> set[str]:
    """Functions and classes defined at the top of a module (an unparsable base has none)."""
    if isinstance(source, str):
        try:
            source = ast.parse(source)
        except SyntaxError:
            return set()
    return {node.name for node in source.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
