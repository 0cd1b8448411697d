"""Pod identity: POD_ID, else POD_NAME, else a persisted id that live processes never share."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from app.config import Settings
from app.runtime.pod_identity import IDENTITY_DIR, claim_persisted, claim_pod_identity

ROOT = Path(__file__).resolve().parents[3]


def test_pod_id_wins_then_pod_name(tmp_path: Path) -> None:
    assert claim_pod_identity(Settings(pod_id="p1", pod_name="n1", data_root=tmp_path)).pod_id == "p1"
    by_name = claim_pod_identity(Settings(pod_name="orchestrator-7f9c-x2", data_root=tmp_path))
    assert (by_name.pod_id, by_name.source) == ("orchestrator-7f9c-x2", "POD_NAME")
    assert not (tmp_path / IDENTITY_DIR).exists()  # nothing persisted when the cluster names the pod


def test_a_persisted_id_is_taken_again_once_released(tmp_path: Path) -> None:
    first = claim_pod_identity(Settings(data_root=tmp_path))
    assert first.source == "persisted"
    first.release()
    first.release()

    again = claim_pod_identity(Settings(data_root=tmp_path))

    assert again.pod_id == first.pod_id
    assert (tmp_path / IDENTITY_DIR / "0.id").read_text().strip() == first.pod_id
    again.release()


def test_two_live_holders_never_share_an_id(tmp_path: Path) -> None:
    first, second = claim_persisted(tmp_path), claim_persisted(tmp_path)
    assert first.pod_id != second.pod_id
    first.release()
    third = claim_persisted(tmp_path)  # the lowest free id: the one released
    assert third.pod_id == first.pod_id
    second.release()
    third.release()


def test_an_unwritable_data_root_falls_back_to_a_process_id(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    identity = claim_pod_identity(Settings(data_root=blocker))
    assert identity.source == "process" and identity.pod_id.endswith(f"-{os.getpid()}")


def test_the_id_of_a_killed_process_goes_to_the_next_one_and_not_while_it_lives(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import pathlib, sys; from app.runtime.pod_identity import claim_persisted; "
         "held = claim_persisted(pathlib.Path(sys.argv[1])); print(held.pod_id, flush=True); sys.stdin.read()",
         str(tmp_path)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None
        held = holder.stdout.readline().strip()
        assert held

        while_alive = claim_persisted(tmp_path)
        assert while_alive.pod_id != held
        while_alive.release()

        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        after = claim_persisted(tmp_path)
        assert after.pod_id == held
        after.release()
    finally:
        holder.kill()
        holder.wait(10)
