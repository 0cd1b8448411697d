"""What of the data volume an agent Job's pod sees: its own workspace, and nothing else.

The volume holds every client's workspace and the service's own state (`DATA_ROOT/.orchestrator/`):
a Job mounts only `subPath` = its workspace, at the same absolute path, so the entrypoint's paths
stay as they are. In agent and test modes the workspace's git directory is mounted again over it,
read-only: what the agent writes is data, never git configuration, hooks or a `commondir` the
service's git would follow (issue 40). The git Job (commit, push) gets it read-write.

A goal's linked worktree (`<main>.jervis-goals/<goal>`, `app/agents/worktrees.py`) has a `.git`
file pointing into the main workspace's `.git`: that file is mounted read-only too, and the main
workspace's `.git` (read-only unless git mode) at its own path. The main workspace is found from
the layout the service made, never from the `gitdir:` line the agent could have rewritten.

The one look at the volume: a `.git` is mounted only when it is there and is no symlink. The kubelet
creates a missing `subPath` (an empty `.git` would appear in a project that has none) and follows a
symlink anywhere inside the volume (an agent's `.git -> ../../other-client` would mount another
client's files); without the mount, a symlinked `.git` points at nothing the pod can see.
"""

from __future__ import annotations

import stat
from pathlib import Path, PurePosixPath

from kubernetes import client

from app.agents.base import AgentJob
from app.agents.worktrees import WORKTREES_SUFFIX

DATA_VOLUME = "data"
HOME_VOLUME = "home"
TMP_VOLUME = "tmp"
#: The agent's HOME: an emptyDir (the images' own HOME is on the read-only root filesystem).
AGENT_HOME = "/home/jervis-agent"
TMP_DIR = "/tmp"


class WorkspaceOutsideDataRootError(ValueError):
    """A Job's workspace is not a folder below DATA_ROOT: there is nothing of the volume it may mount."""


def volume_path(data_root: Path, path: Path) -> PurePosixPath:
    """`path` relative to the volume's root; refused when it is the root itself or not below it."""
    try:
        relative = PurePosixPath(path.relative_to(data_root).as_posix())
    except ValueError:
        raise WorkspaceOutsideDataRootError(f"{path} is not below DATA_ROOT {data_root}") from None
    if not relative.parts or any(part in ("", ".", "..") for part in relative.parts):
        raise WorkspaceOutsideDataRootError(f"{path} is not a folder below DATA_ROOT {data_root}")
    return relative


def main_workspace(workspace: Path) -> Path | None:
    """The main workspace of a goal's linked worktree (`<main>.jervis-goals/<goal>`), else None."""
    folder = workspace.parent.name
    if folder.endswith(WORKTREES_SUFFIX) and len(folder) > len(WORKTREES_SUFFIX):
        return workspace.parent.with_name(folder[: -len(WORKTREES_SUFFIX)])
    return None


def _kind(path: Path) -> str | None:
    """"dir" / "file" for a real directory / regular file (never through a final symlink), else None."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return None
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else None


def _mount(data_root: Path, path: Path, *, read_only: bool) -> client.V1VolumeMount:
    return client.V1VolumeMount(name=DATA_VOLUME, mount_path=str(path),
                                sub_path=volume_path(data_root, path).as_posix(), read_only=read_only or None)


def data_mounts(data_root: Path, job: AgentJob) -> list[client.V1VolumeMount]:
    """The workspace read-write, then its git metadata over it (read-only unless git mode); parents first."""
    git_readonly = job.entrypoint_mode != "git"
    mounts = [_mount(data_root, job.workspace, read_only=False)]
    main = main_workspace(job.workspace)
    own_git = job.workspace / ".git"
    if main is None:
        if git_readonly and _kind(own_git) == "dir":
            mounts.append(_mount(data_root, own_git, read_only=True))
        return mounts
    if git_readonly and _kind(own_git) == "file":  # the worktree's `gitdir:` pointer
        mounts.append(_mount(data_root, own_git, read_only=True))
    if _kind(main / ".git") == "dir":
        mounts.append(_mount(data_root, main / ".git", read_only=git_readonly))
    return mounts


def scratch_mounts() -> list[client.V1VolumeMount]:
    return [client.V1VolumeMount(name=HOME_VOLUME, mount_path=AGENT_HOME),
            client.V1VolumeMount(name=TMP_VOLUME, mount_path=TMP_DIR)]


def volumes(claim_name: str, scratch_size: str) -> list[client.V1Volume]:
    """The data volume (mounted by subPath only) and the writable emptyDirs of HOME and /tmp."""
    return [
        client.V1Volume(name=DATA_VOLUME, persistent_volume_claim=client.V1PersistentVolumeClaimVolumeSource(
            claim_name=claim_name)),
        client.V1Volume(name=HOME_VOLUME, empty_dir=client.V1EmptyDirVolumeSource(size_limit=scratch_size)),
        client.V1Volume(name=TMP_VOLUME, empty_dir=client.V1EmptyDirVolumeSource(size_limit=scratch_size)),
    ]
