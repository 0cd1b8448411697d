"""What a hostile agent plants in a workspace's git metadata so that the service's own git (outside
the sandbox) runs its program: each helper plants one thing; `Planted.ran()` says whether the
program ran (it appends a line to its marker file whenever git starts it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support import git


@dataclass(frozen=True)
class Planted:
    """The agent's program and the file it leaves behind when anything runs it."""

    program: Path
    marker: Path

    def ran(self) -> bool:
        return self.marker.exists()


def agent_program(folder: Path) -> Planted:
    """A program usable as a filter, textconv, diff or merge driver, hook, fsmonitor or gpg: it
    records that it ran, then behaves (passes stdin or the named file through, exits 0)."""
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / "ran-as-the-service.txt"
    program = folder / "planted.sh"
    program.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\n'
                       'if [ -f "$1" ]; then cat "$1"; else cat; fi\nexit 0\n')
    program.chmod(0o755)
    return Planted(program, marker)


def configure_drivers(config: Path, planted: Planted) -> None:
    """Every program-running setting git has, in one config file, all naming the agent's program."""
    p = planted.program
    config.parent.mkdir(parents=True, exist_ok=True)
    with config.open("a") as handle:
        handle.write(f'[filter "x"]\n\tclean = {p}\n\tsmudge = {p}\n'
                     f'[diff "x"]\n\ttextconv = {p}\n\tcommand = {p}\n'
                     f'[merge "x"]\n\tdriver = {p} %O %A %B\n'
                     f'[core]\n\tfsmonitor = {p}\n\thooksPath = {config.parent / "hooks"}\n'
                     f'[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = {p}\n')


def use_drivers(workspace: Path) -> None:
    """A `.gitattributes` naming the drivers, through a macro (as `* x` would hide them from a grep)."""
    (workspace / ".gitattributes").write_text("[attr]jervis filter=x diff=x merge=x\n* jervis\n")


def plant_hook(git_dir: Path, planted: Planted, *names: str) -> None:
    hooks = git_dir / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    for name in names or ("pre-commit", "post-commit", "post-checkout", "post-index-change", "reference-transaction",
                          "pre-push", "post-rewrite"):
        (hooks / name).write_text(planted.program.read_text())
        (hooks / name).chmod(0o755)


def foreign_git_dir(folder: Path, source: Path, planted: Planted) -> Path:
    """A git directory of the agent's: the workspace's objects, refs and HEAD, and a config of its own
    defining the drivers (what `commondir` or a `gitdir:` file would redirect git to)."""
    folder.mkdir(parents=True, exist_ok=True)
    git(folder.parent, "clone", "-q", "--bare", "--no-hardlinks", str(source), str(folder))
    (folder / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
    configure_drivers(folder / "config", planted)
    plant_hook(folder, planted)
    return folder
