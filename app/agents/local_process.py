"""The local agent as a process that outlives the service, found again by its job's name.

A step's agent can run for half an hour; the service may die, be restarted or hand the run to
another pod meanwhile. So the agent is started in its own session, writes its output to a file
(a pipe would break with the reader, and the agent would die of SIGPIPE), and its exit code is
recorded by `exit_recorder.py`. Beside them a small record names the process: its pid, the pid's
start time (a reused pid has another one) and the boot (after a reboot every pid is someone
else's). They sit in a folder per job under the job's deterministic name (`job_spec.job_name`),
as a Kubernetes Job would be found by its name, so a restarted service, or another service
process sharing DATA_ROOT, finds the agent again.

That folder is the service's own: `DATA_ROOT/.orchestrator/agent-runs/<job name>/`, outside every
workspace, in DATA_ROOT, which the sandbox hides (`sandbox.AgentSandbox.hidden_paths`; a test
run's tool cache is bound in below `.orchestrator/agent-tools/`, never this). It used to be
`<workspace>/.jervis/runs/`, which the agent writes: an agent could swap its log for a link to
another client's file (streamed by the service, or emptied by the log cap) or plant the record
of the next attempt with its own log path and a forged exit code. Now nothing of the runner's
state is taken from anything an agent could have written: every path is derived from the job's
name, files are created with `O_EXCL`/`O_NOFOLLOW`, the agent gets the log as its standard output
(a descriptor opened here; it never sees the file), and the service reads and caps the log
through its own descriptor (`log_lines.LogFollower`). A `.jervis/runs/` in a workspace is just
agent output, ignored (and removed with `.jervis/` by the cleanup).

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
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ValidationError

from app.agents import confinement

log = logging.getLogger(__name__)

#: The service's own folder of job folders, below DATA_ROOT (hidden from every sandbox).
RUNS_DIR = confinement.SERVICE_DIR / "agent-runs"
RECORD_FILE = "record.json"
LOG_FILE = "output.log"
EXIT_FILE = "exit.json"
#: A record, an exit status or a note is a few hundred bytes; anything larger is not ours.
MAX_STATE_BYTES = 1024 * 1024
EXIT_RECORDER = Path(__file__).resolve().with_name("exit_recorder.py")
#: A job folder whose agent has ended is kept this long for a service that re-attaches to judge it;
#: after that its run was never resumed (`AgentProcess.sweep`).
FORGOTTEN_AFTER_SECONDS = 7 * 24 * 3600.0
#: Seconds an agent gets between SIGTERM and SIGKILL (the entrypoint writes its result meanwhile).
STOP_GRACE_SECONDS = 5.0
#: How long `stop` waits, after SIGKILL, for the last of the group to be gone.
GROUP_GONE_SECONDS = 2.0
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
#: New files of the service's own: never an existing name, never through a symlink.
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class RunStateError(RuntimeError):
    """The service's folder of agent runs is not a real directory of its own (a symlink?)."""


class ProcessRecord(BaseModel):
    """`<job name>/record.json`: which process runs the job, so another service process can find it."""

    job_name: str
    thread_id: str
    step: str
    """Which step of the thread (every attempt of it shares this): an earlier attempt is retired."""
    workspace: str
    """The workspace it works on: attempts are retired per workspace (a goal's worktree is another)."""
    pid: int
    """Also the process group of the agent and everything it starts."""
    start_ticks: int
    """Field 22 of /proc/<pid>/stat: a pid reused by another process has another start time."""
    boot_id: str
    started_at: float
    """Epoch seconds: the step's timeout counts from here, across restarts of the service."""


def runs_dir(data_root: Path) -> Path:
    """`DATA_ROOT/.orchestrator/agent-runs/`, created (mode 0700) where missing. Each part must be a
    real directory: a symlink on the way is refused (RunStateError), never followed."""
    directory = data_root
    for part in RUNS_DIR.parts:
        directory = directory / part
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
        if directory.is_symlink() or not directory.is_dir():
            raise RunStateError(f"{directory} is not a directory of the service's own (a symlink?): "
                                f"no agent runs until it is removed")
    return directory


class AgentProcess:
    """A handle on one agent process, started here or by an earlier service process."""

    def __init__(self, record: ProcessRecord, directory: Path, popen: subprocess.Popen[bytes] | None = None) -> None:
        self.record = record
        self.directory = directory
        """`runs_dir/<job name>`: the record, the log, the exit status and the runner's notes."""
        self._popen = popen  # only when started by this process: it must reap its child
        self.log_file = directory / LOG_FILE
        self._pidfd: int | None = None

    @property
    def pid(self) -> int:
        return self.record.pid

    @classmethod
    def launch(cls, runs: Path, name: str, workspace: Path, command: list[str], env: dict[str, str], *,
               thread_id: str, step: str, notes: Mapping[str, str] | None = None) -> AgentProcess:
        """Start `command` on `workspace` detached from this process; its record is written before
        this returns. `notes` (file name → text) are written into the job's folder first, for
        whoever judges the job (`note`)."""
        directory = runs / name
        _remove_tree(directory)  # a stale attempt's leftovers: its record was gone or dead
        os.mkdir(directory, 0o700)  # exclusive: the folder is this launch's own
        for note, text in (notes or {}).items():
            _create(directory / note, text)
        # O_APPEND: the follower may empty the file under the writer. The agent gets the descriptor,
        # never the path (the folder is hidden from its sandbox).
        output = os.open(directory / LOG_FILE, _NEW_FILE | os.O_APPEND, 0o600)
        try:
            popen = subprocess.Popen(
                [sys.executable, str(EXIT_RECORDER), str(directory / EXIT_FILE), "--", *command],
                cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own session and process group: it outlives us, cancel kills it all
            )
        finally:
            os.close(output)
        stat = _stat(popen.pid)  # our child: its entry stays (as a zombie at worst) until we reap it
        record = ProcessRecord(job_name=name, thread_id=thread_id, step=step, workspace=str(workspace),
                               pid=popen.pid, start_ticks=stat[1] if stat else 0, boot_id=_boot_id(),
                               started_at=time.time())
        process = cls(record, directory, popen)
        _write_atomically(directory / RECORD_FILE, record.model_dump_json())
        process._open_pidfd()
        return process

    @classmethod
    def find(cls, runs: Path, name: str) -> AgentProcess | None:
        """The process recorded for job `name`, alive or not; None when there is no valid record."""
        return cls._load(runs, name)

    @classmethod
    def of_step(cls, runs: Path, workspace: Path, thread_id: str, step: str) -> list[AgentProcess]:
        """Every recorded process of one step of one thread on `workspace` (all its attempts and modes)."""
        try:
            with os.scandir(runs) as listing:
                names = sorted(entry.name for entry in listing if entry.is_dir(follow_symlinks=False))
        except FileNotFoundError:
            return []
        mine: list[AgentProcess] = []
        for process in (cls._load(runs, name) for name in names):
            if process is None:
                continue
            if (process.record.thread_id, process.record.step, process.record.workspace) == (
                    thread_id, step, str(workspace)):
                mine.append(process)
            else:
                process.close()  # another run's agent: not ours to hold a pidfd on
        return mine

    @classmethod
    def sweep(cls, runs: Path, *, older_than: float = FORGOTTEN_AFTER_SECONDS) -> list[str]:
        """Remove the folders of agents that ended (or whose process is gone) more than
        `older_than` seconds after they started: runs that were never resumed. Returns their names."""
        try:
            with os.scandir(runs) as listing:
                names = sorted(entry.name for entry in listing if entry.is_dir(follow_symlinks=False))
        except FileNotFoundError:
            return []
        swept = []
        for process in (cls._load(runs, name) for name in names):
            if process is None:
                continue
            if time.time() - process.record.started_at > older_than and not process.alive():
                log.info("agent run %s ended long ago and was never judged: its folder removed",
                         process.record.job_name)
                process.remove()
                swept.append(process.record.job_name)
            else:
                process.close()
        return swept

    @classmethod
    def _load(cls, runs: Path, name: str) -> AgentProcess | None:
        try:
            record = ProcessRecord.model_validate_json(
                confinement.read_inside(runs, f"{name}/{RECORD_FILE}", max_bytes=MAX_STATE_BYTES))
        except FileNotFoundError:
            return None
        except (OSError, ValidationError, ValueError) as exc:
            log.warning("unreadable agent record %s/%s (%s): removed", name, RECORD_FILE, exc)
            _remove_tree(runs / name)
            return None
        if record.job_name != name:
            log.warning("agent record %s/%s names another job (%s): removed", name, RECORD_FILE, record.job_name)
            _remove_tree(runs / name)
            return None
        process = cls(record, runs / name)
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
            value = json.loads(self.note(EXIT_FILE) or "{}").get("exit_code")
        except (OSError, ValueError, AttributeError) as exc:
            log.warning("exit status of agent pid %d unreadable in %s: %s", self.pid, self.directory, exc)
            value = None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        # Not recorded (the recorder itself was stopped: a timeout, a stall, a cancel): our own
        # child's code is all there is.
        code = self._popen.returncode if self._popen is not None else None
        log.info("no exit status recorded for agent pid %d: %s", self.pid,
                 f"its own exit code {code}" if code is not None else "its exit code is unknown")
        return code

    def note(self, name: str) -> str | None:
        """A file of the job's folder (a note given to `launch`, the exit status); None when absent."""
        try:
            return confinement.read_text_inside(self.directory, name, max_bytes=MAX_STATE_BYTES)
        except FileNotFoundError:
            return None

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
        if not await self.group_gone():
            log.warning("agent pid %d: processes of its group still live %g s after SIGKILL", self.pid,
                        GROUP_GONE_SECONDS)

    async def group_gone(self, seconds: float = GROUP_GONE_SECONDS) -> bool:
        """The kernel ends what SIGKILL hits a moment later, and a sandbox's PID namespace (the relay
        forwarder, whatever the agent started) once its init has died: wait, bounded, until no live
        member of the group is left, so that an agent stopped or ended is one that no longer runs.
        False when some are still there after `seconds` (an unconfined agent's daemon, say)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while _group_members(self.pid):
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    def kill_orphans(self) -> None:
        """A stale record whose leader is gone: kill what is left of its group. While any member
        lives, the kernel does not reuse the group's id, so this cannot hit another process; a
        leader that exists again is a reused pid, and is left alone."""
        if _stat(self.pid) is None:
            self._signal_group(signal.SIGKILL)

    def remove(self) -> None:
        """Delete the job's folder: record, log, exit status and notes (the result has been judged)."""
        self.close()
        _remove_tree(self.directory)

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


def _stat_fields(pid: int | str) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (which may hold spaces): state first,
    the process group third, the start ticks twentieth; None when there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start ticks) of a process from /proc, or None when there is no such process."""
    fields = _stat_fields(pid)
    return (fields[0], int(fields[19])) if fields is not None else None


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group `pgid`, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat_fields(entry.name)) is not None \
                and fields[0] not in "ZX" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _boot_id() -> str:
    try:
        return _BOOT_ID.read_text().strip()
    except OSError:
        return ""


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    _create(temporary, text)
    os.replace(temporary, path)


def _create(path: Path, text: str) -> None:
    """A new file of the service's own (0600): an existing name or a symlink there is an error."""
    fd = os.open(path, _NEW_FILE, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def _remove_tree(directory: Path) -> None:
    """A job's folder, gone (a symlink in its place: the link itself). `shutil.rmtree` follows no
    symlink below it. A failure is logged: the folder is the service's own, nobody else's to fix."""
    try:
        if directory.is_symlink():
            directory.unlink()
        else:
            shutil.rmtree(directory)
    except FileNotFoundError:
        return
    except OSError as exc:
        log.error("could not remove the agent run folder %s: %s", directory, exc)
