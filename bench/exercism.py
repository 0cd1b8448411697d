"""The exercism Python track's practice exercises for `bench.versus_aider`: the seeded draw and the copy.

Aider's code-editing benchmark is the exercism Python practice exercises (github.com/exercism/python,
MIT licence). This module draws `COUNT` of them by a fixed seed from the whole track and copies them
into `bench/exercises/exercism/<slug>/`, keeping the track's own file names:

    random.Random(SEED).sample(sorted(every folder name under exercises/practice/), COUNT)

Nothing is left out of the track before the draw: every one of its 140 exercises (at the recorded
commit) passes its tests with its `.meta/example.py` and the standard library alone, offline
(`error-handling` needs its `test_utils.py` beside the tests, copied as a support file).

    git clone https://github.com/exercism/python /tmp/exercism-python   # or any copy of its git dir
    .venv/bin/python -m bench.exercism /tmp/exercism-python [--commit <hash>]

Copied per exercise: the stub and the test file (`.meta/config.json`'s `files.solution` and
`files.test`), any other top-level file the tests import (`test_utils.py`), `.docs/introduction.md`,
`.docs/instructions.md`, `.docs/instructions.append.md` (whichever exist: Aider's benchmark reads
these three), `.meta/config.json` and `.meta/example.py` (the reference solution), and the track's
LICENSE beside them. `bench/exercises/exercism/track.json` records the commit, the seed and the
track's whole list of slugs, so the draw can be checked without the track at hand.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

TARGET = Path(__file__).resolve().parent / "exercises" / "exercism"
MANIFEST = "track.json"
SEED = 31
COUNT = 30
REPOSITORY = "https://github.com/exercism/python"
DOCS = (".docs/introduction.md", ".docs/instructions.md", ".docs/instructions.append.md")


def draw(slugs: list[str], seed: int = SEED, count: int = COUNT) -> list[str]:
    """The drawn slugs in the order drawn: `random.Random(seed).sample(sorted(slugs), count)`."""
    return random.Random(seed).sample(sorted(slugs), count)


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(git_dir), *args], check=True, capture_output=True, text=True).stdout


def track_slugs(git_dir: Path, commit: str) -> list[str]:
    """Every folder under `exercises/practice/` at `commit`, sorted."""
    names = _git(git_dir, "ls-tree", "-d", "--name-only", commit, "exercises/practice/").split()
    return sorted(name.rsplit("/", 1)[1] for name in names)


def copy_exercise(git_dir: Path, commit: str, slug: str, target: Path, licence: str) -> None:
    """The exercise's files (see the module's docstring) into `target/<slug>/`, byte for byte."""
    base = f"exercises/practice/{slug}"
    listed = set(_git(git_dir, "ls-tree", "-r", "--name-only", commit, base + "/").split())
    config = json.loads(_git(git_dir, "show", f"{commit}:{base}/.meta/config.json"))
    files = config["files"]
    top_level = {name for name in (path.removeprefix(base + "/") for path in listed)
                 if "/" not in name and not name.startswith(".")}  # not bowling's empty .gitignore
    wanted = {*files["solution"], *files["test"], *files["example"], ".meta/config.json", *top_level,
              *(doc for doc in DOCS if f"{base}/{doc}" in listed)}
    folder = target / slug
    for name in sorted(wanted):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(subprocess.run(["git", "-C", str(git_dir), "show", f"{commit}:{base}/{name}"],
                                        check=True, capture_output=True).stdout)
    (folder / "LICENSE").write_text(licence, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("git_dir", type=Path, help="a clone (or bare git directory) of exercism/python")
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--target", type=Path, default=TARGET)
    args = parser.parse_args()
    commit = _git(args.git_dir, "rev-parse", args.commit).strip()
    slugs = track_slugs(args.git_dir, commit)
    drawn = draw(slugs)
    licence = _git(args.git_dir, "show", f"{commit}:LICENSE")
    args.target.mkdir(parents=True, exist_ok=True)
    for slug in drawn:
        copy_exercise(args.git_dir, commit, slug, args.target, licence)
    (args.target / "LICENSE").write_text(licence, encoding="utf-8")
    manifest = {"repository": REPOSITORY, "commit": commit, "seed": SEED, "count": COUNT,
                "draw": f"random.Random({SEED}).sample(sorted(slugs), {COUNT})", "drawn": drawn, "slugs": slugs}
    (args.target / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"{len(drawn)} of {len(slugs)} exercises at {commit} into {args.target}: {', '.join(sorted(drawn))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
