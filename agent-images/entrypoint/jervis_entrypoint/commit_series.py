"""A series of commits, one per goal, built in a temporary index so that the user's own changes,
staged or not, stay exactly as they were, and idempotent by trailer so a re-run after a crash
goes on where it stopped."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .common import SUMMARY_LIMIT
from .git import TRAILER_DEPTH, GitError, find_commits, git, git_ok, identity_args, is_git_repo, switch_branch
from .git_plan import GitPlan, PlannedCommit


def commit_series(workspace: Path, plan: GitPlan) -> dict[str, Any]:
    """One commit per planned commit, in order, each on top of the previous, on `plan.branch`.

    Each commit takes its files as they are in its tree (the working tree when it has none) and
    everything else from its parent; it is built in a temporary index and `.git/index` changes only
    at the end, for the series' own paths, so the user's other changes, staged or not, stay as
    they were. A re-run after a crash commits nothing twice: everything up to the last commit
    whose trailer is already in the history is done (a commit left out because it changed nothing
    has no trailer to find, and must not be applied again over later ones)."""
    files = plan.changed_files
    if not is_git_repo(workspace):
        raise GitError("a series of commits needs the workspace to be the top level of a git work tree")
    if git(workspace, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").returncode != 0:
        raise GitError("the repository has no commit yet: a series of commits starts from one")
    switch_branch(workspace, plan.branch)
    found = find_commits(workspace, [planned.trailer for planned in plan.commits],
                         depth=TRAILER_DEPTH + len(plan.commits))
    done = max((number for number, planned in enumerate(plan.commits) if planned.trailer in found), default=-1)
    earlier = [found[planned.trailer] for planned in plan.commits[:done + 1] if planned.trailer in found]
    made: list[str] = []
    unchanged = 0
    failure: GitError | None = None
    try:
        with scratch_index(workspace) as index_env:
            for planned in plan.commits[done + 1:]:
                sha = commit_planned(workspace, planned, index_env)
                if sha is None:
                    unchanged += 1
                else:
                    made.append(sha)
    except GitError as exc:
        failure = exc
    shas = earlier + made
    if shas and files:  # even after a failure the index follows the commits made (no paths: reset all!)
        try:
            git_ok(workspace, "reset", "-q", "--", *files, env=LITERAL_PATHS, raw_paths=True)
        except GitError as exc:
            failure = failure or exc
    result: dict[str, Any] = {"changedFiles": files, "commitSha": shas[-1] if shas else None, "commits": shas}
    if failure is not None:
        return {"success": False, "summary": str(failure)[:SUMMARY_LIMIT]} | result | {"commitSha": None}
    if not shas:
        return {"success": False, "summary": f"Nothing to commit: none of the {len(plan.commits)} commit(s) "
                                             "changes a file"} | result
    if not made:
        summary = f"Already committed as {shas[-1][:12]} on {plan.branch} ({len(shas)} commit(s))"
    else:
        skipped = [f"{count} {what}" for count, what in ((len(earlier), "already committed"),
                                                          (unchanged, "unchanged")) if count]
        summary = (f"Committed {len(made)} commit(s) of {len(files)} file(s) as {shas[-1][:12]} on {plan.branch}"
                   + (f" ({', '.join(skipped)})" if skipped else ""))
    return {"success": True, "summary": summary} | result


#: Paths from git.json are file names, never patterns (`*`, `[` or `:` in a name mean themselves).
LITERAL_PATHS = {"GIT_LITERAL_PATHSPECS": "1"}
#: Where the series builds its commits: inside the git dir, never `.git/index`.
COMMIT_INDEX = Path("jervis") / "commit-index"


def index_git(workspace: Path, index_env: Mapping[str, str], *args: str, input_text: str | None = None) -> str:
    """A git command on the temporary index (no split index: it would leave shared-index files behind)."""
    return git_ok(workspace, "-c", "core.splitIndex=false", *args, env=index_env, input_text=input_text,
                  raw_paths=True)


@contextlib.contextmanager
def scratch_index(workspace: Path) -> Iterator[dict[str, str]]:
    """The environment of git commands on a temporary index in the git dir; the file is always removed
    (also one that a killed run left behind, with its lock)."""
    git_dir = Path(git_ok(workspace, "rev-parse", "--absolute-git-dir").strip())
    index = git_dir / COMMIT_INDEX
    lock = index.with_name(index.name + ".lock")
    if index.parent.is_symlink():
        raise GitError(f"{index.parent} is a symlink; the series' index is built only in the git dir itself")
    try:
        index.parent.mkdir(exist_ok=True)
        for leftover in (index, lock):
            leftover.unlink(missing_ok=True)
    except OSError as exc:
        raise GitError(f"cannot prepare {index}: {exc}") from exc
    try:
        yield {"GIT_INDEX_FILE": str(index), **LITERAL_PATHS}
    finally:
        for leftover in (index, lock):
            with contextlib.suppress(OSError):
                leftover.unlink(missing_ok=True)


def commit_planned(workspace: Path, planned: PlannedCommit, index_env: Mapping[str, str]) -> str | None:
    """Commit `planned` on top of HEAD and move the branch to it; None (no commit) when it changes nothing."""
    parent = git_ok(workspace, "rev-parse", "--verify", "HEAD^{commit}").strip()
    index_git(workspace, index_env, "read-tree", parent)
    if planned.files:
        present = index_git(workspace, index_env, "ls-files", "-z", "--", *planned.files)
        indexed = [path for path in present.split("\0") if path]
        if planned.tree is None:
            stage_working_tree(workspace, planned.files, indexed, index_env)
        else:
            stage_from_tree(workspace, planned, indexed, "0" * len(parent), index_env)
    tree = index_git(workspace, index_env, "write-tree").strip()
    if tree == git_ok(workspace, "rev-parse", "--verify", f"{parent}^{{tree}}").strip():
        return None
    sha = git_ok(workspace, *identity_args(workspace), "commit-tree", tree, "-p", parent,
                 "-m", f"{planned.message}\n\n{planned.trailer}").strip()
    subject = planned.message.splitlines()[0]
    git_ok(workspace, "update-ref", "-m", f"jervis commit: {subject}", "HEAD", sha, parent)
    return sha


def stage_from_tree(workspace: Path, planned: PlannedCommit, indexed: list[str], zero_id: str,
                    index_env: Mapping[str, str]) -> None:
    """The temporary index takes `planned.files` as they are in `planned.tree`: entries of those paths
    are removed (mode 0), then the tree's entries added as they are (mode, executable bit, symlink)."""
    if git(workspace, "cat-file", "-e", f"{planned.tree}^{{tree}}").returncode != 0:
        raise GitError(f"tree {planned.tree} is not in the repository (commit '{planned.trailer}')")
    listing = git_ok(workspace, "ls-tree", "-r", "-z", "--", str(planned.tree), *planned.files, raw_paths=True)
    entries = [f"0 {zero_id}\t{path}" for path in indexed] + [entry for entry in listing.split("\0") if entry]
    if entries:
        index_git(workspace, index_env, "update-index", "-z", "--index-info",
                  input_text="".join(entry + "\0" for entry in entries))


def stage_working_tree(workspace: Path, files: list[str], indexed: list[str], index_env: Mapping[str, str]) -> None:
    """The temporary index takes `files` as they are in the working tree (a deleted one is removed); a
    path in neither (made and deleted again) is left out, because `git add` refuses it."""
    def known(path: str) -> bool:
        name = path.rstrip("/")
        return os.path.lexists(workspace / path) or any(
            entry == name or entry.startswith(name + "/") for entry in indexed)

    paths = [path for path in files if known(path)]
    if paths:
        index_git(workspace, index_env, "add", "-A", "--", *paths)
