"""This process's pod identity: who owns lock slots and runs in MongoDB.

It must outlive a crash: a restarted service that finds its own id on a lock slot and on
`running` runs knows they are left over from its earlier life, frees the slots and adopts the
runs at once, instead of waiting `LOCK_STALE_SECONDS` as it must for another pod's. So, in
order: `POD_ID` when set; else `POD_NAME` (the Kubernetes pod name from the downward API: a
restarted container keeps it); else an id persisted under `DATA_ROOT`. Persisted ids live one per
file in a pool, each held with an exclusive OS file lock for the life of the process: two live
processes on one data root never share one (the second takes another file, or makes a new id),
and a restarted process takes the id its killed predecessor held (the kernel dropped the lock).
flock is reliable on local file systems; a data root shared over the network between hosts
should not rely on it (set `POD_ID` or `POD_NAME` there).
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from app.config import Settings

log = logging.getLogger(__name__)

#: Under DATA_ROOT: one file per persisted id, `<n>.id`.
IDENTITY_DIR = Path(".orchestrator") / "pod-ids"
#: More live processes than this on one data root is a misconfiguration, not a pool to grow.
MAX_IDS = 256

Source = Literal["POD_ID", "POD_NAME", "persisted", "process"]


@dataclass
class PodIdentity:
    """A claimed id. A persisted one stays this process's while the object lives (it holds the
    locked file): keep it until the service stops."""

    pod_id: str
    source: Source
    """Where the id came from (`process`: nothing persisted it, the old hostname-pid)."""
    _handle: IO[str] | None = None

    def release(self) -> None:
        """Give a persisted id back (closing the file drops its lock); idempotent."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def claim_pod_identity(settings: Settings) -> PodIdentity:
    """This process's id (module doc); release it when the process stops serving."""
    if settings.pod_id:
        return PodIdentity(settings.pod_id, "POD_ID")
    if settings.pod_name:
        return PodIdentity(settings.pod_name, "POD_NAME")
    try:
        return claim_persisted(settings.data_root / IDENTITY_DIR)
    except OSError as exc:  # e.g. a read-only data root: an id that does not survive a restart
        fallback = f"{socket.gethostname()}-{os.getpid()}"
        log.warning("cannot persist a pod id under %s (%s): using %s, which a restart does not keep",
                    settings.data_root, exc, fallback)
        return PodIdentity(fallback, "process")


def claim_persisted(directory: Path) -> PodIdentity:
    """The first id file in `directory` no live process holds, created with a new id if needed."""
    directory.mkdir(parents=True, exist_ok=True)
    for index in range(MAX_IDS):
        handle = (directory / f"{index}.id").open("a+", encoding="utf-8")  # created if missing, never truncated
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        except BaseException:
            handle.close()
            raise
        handle.seek(0)
        pod_id = handle.read().strip()
        if not pod_id:
            pod_id = f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
            handle.seek(0)
            handle.truncate()
            handle.write(pod_id + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        return PodIdentity(pod_id, "persisted", handle)
    raise OSError(f"all {MAX_IDS} pod ids under {directory} are held by live processes")
