"""Small Python exercises for comparing coding agents: the service driving Aider against bare Aider.

Each exercise is a folder `<slug>/` holding a stub module `<slug>.py` (signatures, docstrings and
`raise NotImplementedError`), its tests `test_<slug>.py` (standard-library `unittest`, so they run with
`python3 -m unittest test_<slug>` in the folder), `instructions.md` (the task in plain English) and
`.meta/solution.py` (a reference solution; never handed to an agent).

    from bench.exercises import load_exercises
    for exercise in load_exercises():
        exercise.copy_to(workspace / exercise.slug)   # stub and tests only
        prompt = exercise.request()                    # what a user would type
"""

from __future__ import annotations

import ast
import shutil
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
INSTRUCTIONS = "instructions.md"
SOLUTION = Path(".meta") / "solution.py"


@dataclass(frozen=True)
class Exercise:
    slug: str
    folder: Path
    module: str  # "leap" (file leap.py)
    stub_file: str  # "leap.py"
    test_file: str  # "test_leap.py"
    instructions: str  # text of instructions.md

    @property
    def solution_file(self) -> Path:
        """The reference solution (the whole module, solved)."""
        return self.folder / SOLUTION

    def _definitions(self) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
        tree = ast.parse((self.folder / self.stub_file).read_text(encoding="utf-8"), filename=self.stub_file)
        return [node for node in tree.body
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and not node.name.startswith("_")]

    def public_names(self) -> list[str]:
        """The stub's public top-level functions and classes, in source order (read with `ast`)."""
        return [node.name for node in self._definitions()]

    def request(self) -> str:
        """The request a user would type to the coding agent: what to implement where, then the instructions."""
        functions = ", ".join(node.name if isinstance(node, ast.ClassDef) else f"{node.name}()"
                              for node in self._definitions())
        return (f"Implement {functions} in {self.stub_file} as described below, so that the tests in "
                f"{self.test_file} pass. Do not change {self.test_file}.\n\n{self.instructions}")

    def test_command(self) -> list[str]:
        """The command that runs the exercise's tests, from inside its folder."""
        return ["python3", "-m", "unittest", f"test_{self.module}"]

    def copy_to(self, target: Path) -> None:
        """Copy the stub and the test file (never the instructions or `.meta/`) into `target`."""
        target.mkdir(parents=True, exist_ok=True)
        for name in (self.stub_file, self.test_file):
            shutil.copyfile(self.folder / name, target / name)


def load_exercise(folder: Path) -> Exercise:
    """The exercise in `folder`; a missing file of it is an error, not a skipped exercise."""
    module = folder.name
    stub_file, test_file = f"{module}.py", f"test_{module}.py"
    missing = [name for name in (stub_file, test_file, INSTRUCTIONS, SOLUTION.as_posix())
               if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"exercise {folder} lacks {', '.join(missing)}")
    return Exercise(slug=module, folder=folder, module=module, stub_file=stub_file, test_file=test_file,
                    instructions=(folder / INSTRUCTIONS).read_text(encoding="utf-8"))


def load_exercises(root: Path | None = None) -> list[Exercise]:
    """Every exercise under `root` (default: this package's folder), sorted by slug."""
    base = ROOT if root is None else root
    folders = [path for path in base.iterdir() if path.is_dir() and not path.name.startswith((".", "_"))]
    return [load_exercise(folder) for folder in sorted(folders, key=lambda path: path.name)]
