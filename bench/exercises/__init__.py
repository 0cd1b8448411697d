"""Python exercises for comparing coding agents: the service driving Aider against bare Aider.

Two layouts, both from the exercism Python track (github.com/exercism/python, MIT licence: its
notice is the `LICENSE` beside every copied exercise; see README.md here):

- **the twelve** `bench/exercises/<module>/`, adapted from the track earlier: a stub `<module>.py`
  (signatures, docstrings and `raise NotImplementedError`), its tests `test_<module>.py`,
  `instructions.md` and `.meta/solution.py` (a reference solution);
- **the track's own** `bench/exercises/exercism/<slug>/`, copied unchanged by `bench.exercism` (30
  drawn by a fixed seed): the stub and the tests under the names `.meta/config.json` gives them
  (`leap.py`, `leap_test.py`), any support file the tests import, `.docs/` and `.meta/example.py`.

Every exercise is handed to an agent as Aider's benchmark hands it (`bench.aider_prompts`): the
instructions followed by Aider's `instructions_addendum` naming the stub, the stub and the test file
(and support files) in the workspace, never the instructions file or `.meta/`.

    from bench.exercises import load_exercises
    for exercise in load_exercises():
        exercise.copy_to(workspace / exercise.slug)   # stub, tests, support files
        prompt = exercise.request()                    # instructions + Aider's benchmark prompt
"""

from __future__ import annotations

import ast
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bench.aider_prompts import instructions_addendum

ROOT = Path(__file__).resolve().parent
EXERCISM = "exercism"
INSTRUCTIONS = "instructions.md"
SOLUTION = Path(".meta") / "solution.py"
LICENSE = "LICENSE"
CONFIG = Path(".meta") / "config.json"
#: What Aider's benchmark reads as the instructions, in this order, concatenated as they are
#: (benchmark/benchmark.py `run_test_real`: introduction, instructions, instructions.append).
EXERCISM_DOCS = (".docs/introduction.md", ".docs/instructions.md", ".docs/instructions.append.md")

Layout = Literal["bench", "exercism"]


@dataclass(frozen=True)
class Exercise:
    slug: str  # "leap" (the twelve) or "leap" / "armstrong-numbers" (the track's folder name)
    folder: Path
    layout: Layout
    stub_file: str  # "leap.py"
    test_file: str  # "test_leap.py" or "leap_test.py"
    solution_file: Path  # the reference solution (the whole module, solved); never handed to an agent
    instructions: str
    support_files: tuple[str, ...] = ()  # other files the tests import (exercism's test_utils.py)

    @property
    def module(self) -> str:
        return Path(self.stub_file).stem

    @property
    def name(self) -> str:
        """Unique across both layouts: `leap` (the twelve) and `exercism/leap`."""
        return f"{EXERCISM}/{self.slug}" if self.layout == "exercism" else self.slug

    @property
    def workspace_files(self) -> tuple[str, ...]:
        """What reaches an agent's workspace: the stub, the tests and their support files."""
        return (self.stub_file, self.test_file, *self.support_files)

    def _definitions(self) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
        tree = ast.parse((self.folder / self.stub_file).read_text(encoding="utf-8"), filename=self.stub_file)
        return [node for node in tree.body
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and not node.name.startswith("_")]

    def public_names(self) -> list[str]:
        """The stub's public top-level functions and classes, in source order (read with `ast`)."""
        return [node.name for node in self._definitions()]

    def request(self) -> str:
        """What both sides are asked: the instructions, then Aider's benchmark addendum naming the
        files to edit (benchmark.py: `instructions += prompts.instructions_addendum.format(file_list=…)`,
        the file list being the stub's name)."""
        return self.instructions + instructions_addendum.format(file_list=self.stub_file)

    def copy_to(self, target: Path) -> None:
        """Copy the workspace files (never the instructions, `.meta/` or the licence) into `target`."""
        target.mkdir(parents=True, exist_ok=True)
        for name in self.workspace_files:
            shutil.copyfile(self.folder / name, target / name)


def _missing(folder: Path, names: list[str]) -> None:
    missing = [name for name in names if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"exercise {folder} lacks {', '.join(missing)}")


def load_exercise(folder: Path) -> Exercise:
    """The exercise of the twelve's layout in `folder`; a missing file is an error, not a skip."""
    module = folder.name
    stub_file, test_file = f"{module}.py", f"test_{module}.py"
    _missing(folder, [stub_file, test_file, INSTRUCTIONS, SOLUTION.as_posix(), LICENSE])
    return Exercise(slug=module, folder=folder, layout="bench", stub_file=stub_file, test_file=test_file,
                    solution_file=folder / SOLUTION, instructions=(folder / INSTRUCTIONS).read_text(encoding="utf-8"))


def load_exercism_exercise(folder: Path) -> Exercise:
    """A practice exercise as the exercism track lays it out (`.meta/config.json` names its files)."""
    _missing(folder, [CONFIG.as_posix(), LICENSE, ".docs/instructions.md"])
    files = json.loads((folder / CONFIG).read_text(encoding="utf-8"))["files"]
    if len(files["solution"]) != 1 or len(files["test"]) != 1 or len(files["example"]) != 1:
        raise ValueError(f"exercise {folder}: one stub, one test file and one example expected, not {files}")
    stub_file, test_file, example = files["solution"][0], files["test"][0], files["example"][0]
    _missing(folder, [stub_file, test_file, example])
    support = tuple(sorted(path.name for path in folder.iterdir()
                           if path.is_file() and path.suffix == ".py" and path.name not in (stub_file, test_file)))
    instructions = "".join((folder / doc).read_text(encoding="utf-8") for doc in EXERCISM_DOCS
                           if (folder / doc).is_file())
    return Exercise(slug=folder.name, folder=folder, layout="exercism", stub_file=stub_file, test_file=test_file,
                    solution_file=folder / example, instructions=instructions, support_files=support)


def load_exercises(root: Path | None = None) -> list[Exercise]:
    """Every exercise under `root` (default: this package's folder): the twelve's layout sorted by
    slug, then those of `root/exercism/` sorted by slug."""
    base = ROOT if root is None else root
    folders = sorted((path for path in base.iterdir()
                      if path.is_dir() and not path.name.startswith((".", "_")) and path.name != EXERCISM),
                     key=lambda path: path.name)
    exercises = [load_exercise(folder) for folder in folders]
    track = base / EXERCISM
    if track.is_dir():
        exercises += [load_exercism_exercise(folder) for folder in sorted(track.iterdir(), key=lambda p: p.name)
                      if folder.is_dir() and not folder.name.startswith((".", "_"))]
    return exercises
