"""Runs the entrypoint: `python3 <folder>/jervis_entrypoint` (the images, the local runner) or
`python3 -m jervis_entrypoint` with its folder on the path.

Run as a folder, Python puts the package's own folder first on `sys.path`; its parent takes that
place, so the package imports as itself and its modules (`git`, `tests`, …) never stand in for
top-level ones: `sys.path` is then what it was for the single-file entrypoint, never the
workspace it runs in (as `-m` from the workspace would make it)."""

from __future__ import annotations

import sys
from pathlib import Path


def package_on_path() -> None:
    """Make `jervis_entrypoint` importable when this file runs as a folder's `__main__`."""
    here = Path(__file__).resolve().parent
    parent = str(here.parent)
    if sys.path and sys.path[0] and Path(sys.path[0]).resolve() == here:
        sys.path[0] = parent
    elif parent not in sys.path:
        sys.path.insert(0, parent)


def run() -> int:
    """The exit code of one entrypoint run."""
    if not __package__:
        package_on_path()
    from jervis_entrypoint.main import main

    return main()


if __name__ == "__main__":
    sys.exit(run())
