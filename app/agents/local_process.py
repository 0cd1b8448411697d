"""The local agent as a process that outlives the service, found again by its job's name.

A step's agent can run for half an hour; the service may die, be restarted or hand the run to
another pod meanwhile. So the agent is started in its own session, writes its output to a file
(a pipe would break with the reader, and the agent would die of SIGPIPE), and its exit code is
recorded by `exit_recorder.py`. Beside them a small record names the process: its pid, the pid's
start time (a reused pid has another one) and the boot (after a reboot every pid is someone
else's). All three files sit in `<workspace>/.jervis/runs/` under the job's deterministic name
(`job_spec.job_name`), as a Kubernetes Job would be found by its name.

Pids mean something only on one machine and in one PID namespace: a record made elsewhere (another
host or container sharing the volume) looks stale here, and the step starts again. The local
runner is for one machine (development, a single container); clusters use Jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ValidationError

log = logging.getLogger(__name__)

RUNS_DIR = Path(".jervis") / "runs"
EXIT_RECORDER = Path(__file__).resolve().with_name("exit_recorder.py")
#: Seconds an agent gets between SIGTERM and SIGKILL (the entrypoint writes its result meanwhile).
STOP_GRACE_SECONDS = 5.0
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


class ProcessRecord(BaseModel):
    """`<job name>.json`: which process runs the job, so another service process can find it."""

    job_name: str
    thread_id: str
    step: str
    """Which step of the thread (every attempt of it shares this): an earlier attempt is retired."""
    pid: int
    """Also the process group of the agent and everything it starts."""
    start_ticks: int
    """Field 22 of /proc/<pid>/stat: a pid reused by another process has another start time."""
    boot_id: str
    started_at: float
    """Epoch seconds: the step's timeout counts from here, across restarts of the service."""
    log_path: str


def runs_dir(workspace: Path) -> Path:
    """`.jervis/runs/`, created; a symlink the agent left in its place is removed, not followed."""
    directory = workspace
    for part in RUNS_DIR.parts:
        directory = directory / part
        if directory.is_symlink():
            directory.unlink()
        directory.mkdir(exist_ok=True)
    return directory


class AgentProcess:
    """A handle on one agent process, started here or by an earlier service process."""

    def __init__(self, record: ProcessRecord, workspace: Path, popen: subprocess.Popen[bytes] | None = None) -> None:
        self.record = record
        self._popen = popen  # only when started by this process: it must reap its child
        directory = workspace / RUNS_DIR
        self.state_file = directory / f"{record.job_name}.json"
        self.log_file = Path(record.log_path)
        self.status_file = directory / f"{record.job_name}.exit"
        self._pidfd: int | None = None

    @property
    def pid(self) -> int:
        return self.record.pid

    @classmethod
    def launch(cls, workspace: Path, name: str, command: list[str], env: dict[str, str], *,
               thread_id: str, step: str) -> AgentProcess:
        """Start `command` detached from this process; its record is written before this returns."""
        directory = runs_dir(workspace)
        log_file, status_file = directory / f"{name}.log", directory / f"{name}.exit"
        for stale in (log_file, status_file, directory / f"{name}.json"):
            stale.unlink(missing_ok=True)
        with log_file.open("ab") as output:  # O_APPEND: the reader may empty the file under the writer
            popen = subprocess.Popen(
                [sys.executable, str(EXIT_RECORDER), str(status_file), "--", *command],
                cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own session and process group: it outlives us, cancel kills it all
            )
        stat = _stat(popen.pid)  # our child: its entry stays (as a zombie at worst) until we reap it
        record = ProcessRecord(job_name=name, thread_id=thread_id, step=step, pid=popen.pid,
                               start_ticks=stat[1] if stat else 0, boot_id=_boot_id(), started_at=time.time(),
                               log_path=str(log_file))
        process = cls(record, workspace, popen)
        _write_atomically(process.state_file, record.model_dump_json())
        process._open_pidfd()
        return process

    @classmethod
    def find(cls, workspace: Path, name: str) -> AgentProcess | None:
        """The process recorded for job `name`, alive or not; None when there is no valid record."""
        return cls._load(workspace, workspace / RUNS_DIR / f"{name}.json")

    @classmethod
    def of_step(cls, workspace: Path, thread_id: str, step: str) -> list[AgentProcess]:
        """Every recorded process of one step of one thread (all its attempts and modes)."""
        directory = workspace / RUNS_DIR
        if not directory.is_dir() or directory.is_symlink():
            return []
        found = [cls._load(workspace, path) for path in sorted(directory.glob("*.json"))]
        return [p for p in found if p is not None and p.record.thread_id == thread_id and p.record.step == step]

    @classmethod
    def _load(cls, workspace: Path, path: Path) -> AgentProcess | None:
        try:
            record = ProcessRecord.model_validate_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValidationError, ValueError) as exc:
            log.warning("unreadable agent record %s (%s): removed", path, exc)
            path.unlink(missing_ok=True)
            return None
        process = cls(record, workspace)
        process._open_pidfd()
        return process

    def alive(self) -> bool:
        """Still running: the same process (pid, start time, boot), not a zombie."""
        if self._popen is not None and self._popen.poll() is not None:  # reaps our own child
            return False
        stat = _stat(self.pid)
        return (stat is not None and stat[0] not in "ZX" and stat[1] == self.record.start_ticks
                and self.record.boot_id == _boot_id())

    def exit_code(self) -> int | None:
        """The code the exit recorder wrote (negative: killed by that signal); None if none was."""
        try:
            value = json.loads(self.status_file.read_text(encoding="utf-8")).get("exit_code")
        except FileNotFoundError:  # the recorder itself was stopped (a timeout, a stall, a cancel)
            value = None
        except (OSError, ValueError, AttributeError) as exc:
            log.warning("exit status of agent pid %d unreadable in %s: %s", self.pid, self.status_file, exc)
            value = None
        if isinstance(value, int):
            return value
        # Not recorded: our own child's code is all there is.
        code = self._popen.returncode if self._popen is not None else None
        log.info("no exit status recorded for agent pid %d: %s", self.pid,
                 f"its own exit code {code}" if code is not None else "its exit code is unknown")
        return code

    async def wait(self, seconds: float) -> None:
        """Until the process ends or `seconds` pass; a pidfd wakes us at once, else we sleep."""
        if self._pidfd is None:
            await asyncio.sleep(seconds)
            return
        loop = asyncio.get_running_loop()
        ended = asyncio.Event()
        loop.add_reader(self._pidfd, ended.set)
        try:
            async with asyncio.timeout(seconds):
                await ended.wait()
        except TimeoutError:
            pass
        finally:
            loop.remove_reader(self._pidfd)

    async def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """SIGTERM to the whole group, SIGKILL after `grace`; what the agent started goes too."""
        if not self.alive():
            return
        self._signal_group(signal.SIGTERM)
        if not await self._ended_within(grace):
            self._signal_group(signal.SIGKILL)
            await self._ended_within(grace)
        # Leftovers in the group (children that ignored SIGTERM): the group id is still reserved
        # for them, so it cannot name anyone else's processes.
        self._signal_group(signal.SIGKILL)

    def kill_orphans(self) -> None:
        """A stale record whose leader is gone: kill what is left of its group. While any member
        lives, the kernel does not reuse the group's id, so this cannot hit another process; a
        leader that exists again is a reused pid, and is left alone."""
        if _stat(self.pid) is None:
            self._signal_group(signal.SIGKILL)

    def remove(self) -> None:
        """Delete the record, the log and the exit status (the result has been judged)."""
        self.close()
        for path in (self.state_file, self.log_file, self.status_file):
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.state_file.parent.rmdir()  # only when empty

    def release(self) -> None:
        """Stop watching and leave the process running (a suspended run). Our own child is then
        reaped by a thread that waits for it, so it leaves no zombie behind while we live on."""
        self.close()
        if self._popen is not None:  # one wait, no loop: the thread ends with the agent
            threading.Thread(target=self._popen.wait, name=f"reap-{self.pid}", daemon=True).start()
            self._popen = None

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    async def _ended_within(self, seconds: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while self.alive():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            await self.wait(min(remaining, 0.1))
        return True

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def _open_pidfd(self) -> None:
        """A pidfd pins the pid (it cannot be reused while open) and becomes readable when the
        process ends, whether it is our child or not. Opened before `alive()` checks the start
        time, so a matching start time means the pidfd is the recorded process."""
        try:
            self._pidfd = os.pidfd_open(self.pid)
        except (OSError, AttributeError):  # gone already, or a kernel without pidfds: poll instead
            self._pidfd = None


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start ticks) of a process from /proc, or None when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return fields[0], int(fields[19])


def _boot_id() -> str:
    try:
        return _BOOT_ID.read_text().strip()
    except OSError:
        return ""


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
