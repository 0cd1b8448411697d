"""What a request is about in its workspace: the files and functions it names, and the tests
that cover those files.

Read from the request's words and the workspace's file names (a bounded walk, no project code
run). Intake decides by it whether a request is certainly a code change, the planner whether one
step will do, and every code step's first attempt is told which tests cover its files, so it is
judged by them from the start instead of finding out from a failed test run.

Files are read only through `agent_files` (the workspace is the agents'): a symlink is never
followed, and a file behind one counts as neither a test nor an importer.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from app.graph.rules import agent_files

#: Directories no request is about (dependencies, caches, our own hand-over folder).
SKIPPED_DIRS = frozenset({".git", ".jervis", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
                          ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", "dist", "build", "target",
                          ".gradle", ".idea", ".cache"})
#: Files listed at most (a monorepo is not walked whole for one request).
MAX_FILES = 5000
#: Test files read for imports at most, and their largest size.
MAX_TEST_FILES_READ = 300
MAX_TEST_BYTES = 200_000

#: A path-like word with an extension: `calc.py`, `src/app/main.ts`, `` `leap.py` ``.
_PATH = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4})(?![\w/-])")
#: Extensions that are not files in prose ("e.g.", "i.e.", versions are digits and never match).
_NOT_EXTENSIONS = frozenset({"g", "e", "m", "s", "t", "etc"})
#: A call-shaped name in the request: `subtract(a, b)`, `leap_year()`.
_CALL = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_TEST_NAME = re.compile(
    r"(?:^test_.+\.py$|^.+_test\.py$|^.+_test\.go$|^.+\.(?:test|spec)\.[cm]?[jt]sx?$|^.+Tests?\.(?:java|kt|cs)$"
    r"|^test_.+\.[a-z]+$)", re.IGNORECASE)
_TEST_DIRS = frozenset({"tests", "test", "__tests__", "spec", "specs"})
_IMPORT = re.compile(r"^\s*(?:from\s+(?P<from>[\w.]+)\s+import\s+(?P<names>[\w., ()]+)|import\s+(?P<mods>[\w., ]+))",
                     re.MULTILINE)


@dataclass(frozen=True)
class RequestScope:
    """The workspace files a request names (tests apart), the functions it names, and the test
    files that cover those files."""

    targets: list[str] = field(default_factory=list)
    """Existing or new source files the request names, as workspace-relative paths."""
    named_tests: list[str] = field(default_factory=list)
    """Test files the request names (context to make pass, not targets)."""
    functions: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    """Test files covering the targets (named by the request, named after a target, or importing one)."""
    files: list[str] = field(default_factory=list, compare=False, repr=False)
    """The workspace's files (the bounded walk the scope was read from): context, not the scope."""

    @property
    def sources(self) -> list[str]:
        """The workspace's files that are not tests."""
        return [path for path in self.files if not is_test_file(path)]

    @property
    def one_file(self) -> bool:
        """A request about one file (and at most a handful of its functions): one step does it."""
        return len(self.targets) == 1


def is_test_file(path: str) -> bool:
    """A test by its name (`test_x.py`, `x_test.py`, `x.spec.ts`, `XTest.java`) or its folder."""
    pure = PurePosixPath(path)
    return bool(_TEST_NAME.match(pure.name)) or any(part in _TEST_DIRS for part in pure.parts[:-1])


def named_paths(text: str) -> list[str]:
    """Path-like words of the request, in order, once each (`calc.py`, `src/a.ts`)."""
    found: dict[str, None] = {}
    for match in _PATH.finditer(text):
        word = match.group(1)
        if word.rsplit(".", 1)[1].lower() in _NOT_EXTENSIONS or word.startswith(("http", "www.")):
            continue
        found.setdefault(word, None)
    return list(found)


def named_functions(text: str) -> list[str]:
    """Call-shaped names of the request (`subtract(a, b)` names `subtract`), once each."""
    return list(dict.fromkeys(_CALL.findall(text)))


def list_files(root: Path, limit: int = MAX_FILES) -> list[str]:
    """Workspace-relative POSIX paths of the files under `root`, skipping dependency and cache
    folders, at most `limit` of them (sorted, so the same tree gives the same answer)."""
    files: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith(".aider"))
        base = Path(folder).relative_to(root)
        for name in sorted(names):
            files.append((base / name).as_posix())
            if len(files) >= limit:
                return files
    return files


def resolve(named: Iterable[str], files: Sequence[str]) -> list[str]:
    """Each named path as a workspace path: itself when it exists, else the one file with that
    name or path suffix (ambiguous names stay as written: a file the request may create)."""
    existing = set(files)
    resolved: dict[str, None] = {}
    for name in named:
        clean = name.strip("./")
        if clean in existing:
            resolved.setdefault(clean, None)
            continue
        suffix = "/" + clean
        matches = [f for f in files if f.endswith(suffix)]
        resolved.setdefault(matches[0] if len(matches) == 1 else clean, None)
    return list(resolved)


def covering_tests(root: Path, files: Sequence[str], targets: Sequence[str], *, named: Sequence[str] = ()) -> list[str]:
    """Test files of the workspace that cover `targets`: those the request named, those named
    after a target (`test_calc.py`, `calc_test.py`, `calc.spec.ts`, `CalcTest.java`), and Python
    test files that import a target module."""
    existing = set(files)
    found: dict[str, None] = {path: None for path in named if path in existing}
    stems = {PurePosixPath(t).stem.lower(): t for t in targets if not is_test_file(t)}
    if not stems:
        return list(found)
    tests = [f for f in files if is_test_file(f)]
    for test in tests:
        if _test_stem(PurePosixPath(test).name) in stems:
            found.setdefault(test, None)
    modules = {stem: _module_names(path) for stem, path in stems.items() if path.endswith(".py")}
    if modules:
        wanted = {name for names in modules.values() for name in names}
        for test in [t for t in tests if t.endswith(".py") and t not in found][:MAX_TEST_FILES_READ]:
            if _imports_any(root, test, wanted):
                found.setdefault(test, None)
    return list(found)


def scope_of(query: str, root: Path | None) -> RequestScope:
    """The request's scope in the workspace at `root` (None: no workspace, names only)."""
    files = list_files(root) if root is not None and root.is_dir() else []
    paths = resolve(named_paths(query), files)
    named_tests = [p for p in paths if is_test_file(p)]
    targets = [p for p in paths if not is_test_file(p)]
    tests = covering_tests(root, files, targets, named=named_tests) if root is not None else []
    return RequestScope(targets=targets, named_tests=named_tests, functions=named_functions(query), tests=tests,
                        files=files)


def _test_stem(name: str) -> str:
    """`test_calc.py`, `calc_test.go`, `calc.spec.ts`, `CalcTest.java` → `calc` (lower-cased)."""
    stem = name.split(".", 1)[0]
    if stem.lower().startswith("test_"):
        stem = stem[len("test_"):]
    for suffix in ("_test", "tests", "test"):
        if stem.lower().endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)].rstrip("_")
            break
    return stem.lower()


def _module_names(path: str) -> set[str]:
    """The dotted names a Python file is imported by: `pkg/calc.py` → {calc, pkg.calc}."""
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if parts and parts[0] == "src":
        parts = parts[1:]
    return {".".join(parts[i:]) for i in range(len(parts))}


def importers_of(root: Path, changed: Sequence[str]) -> dict[str, str]:
    """The workspace's Python files (as they are now) that mention a changed module's name after an
    `import`: what `integrity.broken_imports` reads. Bounded like the test search."""
    stems = {PurePosixPath(path).stem for path in changed if path.endswith(".py")}
    if not stems:
        return {}
    sources: dict[str, str] = {}
    for path in (p for p in list_files(root) if p.endswith(".py")):
        if len(sources) >= MAX_TEST_FILES_READ:
            break
        text = agent_files.read(root, path, max_bytes=MAX_TEST_BYTES).text
        if text is None:  # a link (the agent's, or the repository's) is not followed: no importer
            continue
        if "import" in text and any(stem in text for stem in stems):
            sources[path] = text
    return sources


def _imports_any(root: Path, path: str, modules: set[str]) -> bool:
    """Whether the Python file `root/path` imports one of `modules` (`import m`, `from m import …`,
    `from pkg import m`); a symlink there is not followed (it imports nothing)."""
    text = agent_files.read(root, path, max_bytes=MAX_TEST_BYTES).text
    if text is None:
        return False
    for match in _IMPORT.finditer(text):
        if match.group("from"):
            source = match.group("from")
            names = {n.strip(" ()") for n in match.group("names").split(",")}
            if source in modules or any(f"{source}.{n}" in modules for n in names):
                return True
        else:
            mods = {m.strip().split(" as ")[0] for m in match.group("mods").split(",")}
            if mods & modules:
                return True
    return False
