"""The local agent in a bubblewrap sandbox: it writes its workspace and nothing else, and never
sees the service user's home, the other workspaces or the service's own data.

On the local runner the entrypoint runs model-written code (an agent with a shell, the project's
tests) as the service's own user. `AGENT_SANDBOX` decides how it is confined:

- `auto` (the default): bubblewrap when it works here (one probe per process, with a deadline);
- `bwrap`: bubblewrap is required; without it no agent starts;
- `off`: the operator runs agents unconfined on purpose.

When no sandbox works and the setting is not `off`, an agent that can run commands (every program
but Aider, and every test run) is refused with a failed result that says what to do; Aider, run
with flags that make it run no shell command, starts unconfined with a warning line in its log.

The view inside (`bwrap_argv`, mounts in this order, later ones over earlier ones): the whole
file system read-only; a fresh `/dev`, `/proc` (of its own PID namespace: no other process, and
no other process's environment, is visible) and a private writable `/tmp` (before the workspace,
which may live under /tmp); the hidden paths emptied (HOME, DATA_ROOT with every client's
workspaces, the user's runtime directory, container sockets, `AGENT_SANDBOX_HIDE`); what the
entrypoint itself needs read back in read-only when it lies inside one of them (the project,
the service's Python, the local programs' installs), and the hidden paths inside those emptied
again; then read-write the workspace (its `.git`, a linked worktree's git dir: read-only), `AGENT_SANDBOX_WRITABLE`
and for test runs a per-client tool cache. No capability survives (as root, user-namespace
capabilities would let it unmount the hiding tmpfs), and there is no `--new-session`: the runner
stops an agent by signalling its process group, and the sandboxed processes stay in it (agents
run without a controlling terminal, in a session `AgentProcess` starts, so TIOCSTI is no way out).
bwrap dies of SIGTERM at once and its `--die-with-parent` would then SIGKILL the entrypoint
before it writes its result, so bwrap runs with SIGTERM ignored (`env --ignore-signal`) and the
entrypoint with it restored; SIGKILL of the group ends the PID namespace's init and with it
everything inside, even what left the group.

The network is the sandbox's own (`--unshare-net`: only its `lo`, so no loopback service of the
host, no abstract Unix socket and no host address is reachable), `/run` is hidden with the other
socket directories, and the step's relay directory (`relay.py`) is bound at `/run/jervis-relay`:
the forwarder (`relay_forwarder.py`), started before the entrypoint, listens on the loopback ports
of the endpoints the step may reach (`relay_routes.py`) and hands each connection to the relay.
Every tmpfs (the private /tmp, the hiding ones) has a size (`AGENT_SANDBOX_TMPFS_MB`). Test runs
reach nothing: the pytest they may need is installed by the service beforehand (`test_tools.py`).

Git mode (commit, push after the user's approval) stays unconfined: it is the service's own git
step, runs no agent, and needs what the sandbox hides (the user's git identity, SSH keys and
agent, credential helpers in HOME).
"""

from __future__ import annotations

import asyncio
import logging
import os
import pwd
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path

from app.agents.base import AgentJob
from app.agents.confinement import SERVICE_DIR
from app.agents.control import should_detach
from app.agents.job_spec import job_name
from app.agents.programs import PROJECT_ROOT, resolve
from app.agents.relay import INSIDE, RELAY_DIR, AgentRelay, RelayLease
from app.agents.relay_routes import PROXY_VARIABLES, step_routes
from app.agents.sandbox_git import read_only_git
from app.agents.test_tools import provide_pytest
from app.config import Settings

log = logging.getLogger(__name__)

#: The probe's deadline: a bwrap that hangs is a bwrap that does not work.
PROBE_TIMEOUT_SECONDS = 5.0
#: Namespaces, capabilities and lifetime of every sandbox (and of the probe).
ISOLATION = ("--unshare-all", "--cap-drop", "ALL", "--die-with-parent")
#: bwrap runs with SIGTERM ignored; the command inside gets its default back.
SIGNAL_GUARD = ("env", "--ignore-signal=TERM")
SIGNAL_RESTORE = ("env", "--default-signal=TERM")
#: Sockets that would hand a process on the host root (hidden when they exist).
HOST_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
                "/run/podman/podman.sock")
#: Directories where services keep their sockets (a socket on a read-only mount still connects):
#: hidden whole (`find / -xdev -type s` on the machines this runs on finds them under these).
SOCKET_DIRECTORIES = ("/run", "/var/run")
#: The in-sandbox forwarder, run with the service's Python (isolated, no site: the standard library only).
FORWARDER = Path(__file__).resolve().with_name("relay_forwarder.py")
#: Aider flags that make it run commands (the project's tests, its own suggestions).
AIDER_SHELL_FLAGS = frozenset({"--test-cmd", "--auto-test", "--suggest-shell-commands"})
#: The service's own folder on DATA_ROOT; test runs keep installed tools under it, per client.
TOOLS_DIR = SERVICE_DIR / "agent-tools"
INSTALL_HINT = "apt-get install bubblewrap"


@dataclass(frozen=True)
class Probe:
    """Whether bubblewrap works here, as this process found it once."""

    works: bool
    version: str = ""
    """`bubblewrap 0.8.0`"""
    problem: str = ""
    """Why not, in a few words."""


@dataclass(frozen=True)
class Confined:
    """How one step starts: its command and environment, or why it does not start."""

    argv: list[str]
    env: dict[str, str]
    refusal: str | None = None
    """Set: the step must not start (no sandbox for an agent that can run commands)."""
    lease: RelayLease | None = None
    """The step's relay sockets: open until the runner releases them (`AgentSandbox.release`)."""


_PROBES: dict[str, Probe] = {}


async def probe(bwrap: str | None, timeout: float = PROBE_TIMEOUT_SECONDS) -> Probe:
    """Run a trivial command in a sandbox built as agents' are; the answer is kept per binary
    (whether bwrap works does not change while the service runs)."""
    if bwrap is None:
        return Probe(False, problem="bwrap is not installed")
    if (known := _PROBES.get(bwrap)) is not None:
        return known
    version = await _output([bwrap, "--version"], timeout)
    trial = await _output([*SIGNAL_GUARD, bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                           "--tmpfs", "/tmp", *ISOLATION, "--", *SIGNAL_RESTORE, "true"], timeout)
    name = version[1].splitlines()[0] if version[0] == 0 and version[1] else "bubblewrap"
    if trial[0] == 0:
        found = Probe(True, version=name)
    else:
        found = Probe(False, version=name, problem=f"{name} cannot create a sandbox here: "
                                                   f"{(trial[1].splitlines() or ['no output'])[-1][:200]}")
    if trial[0] is not None:  # a probe that did not start or answer in time is tried again next time
        _PROBES[bwrap] = found
    log.info("agent sandbox: %s", found.version if found.works else found.problem)
    return found


async def _output(argv: list[str], timeout: float) -> tuple[int | None, str]:
    """Exit code (None: did not start or timed out) and output of a short command."""
    try:
        process = await asyncio.create_subprocess_exec(*argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                       stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    try:
        async with asyncio.timeout(timeout):
            out, _ = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        return None, f"no answer within {timeout:g} s"
    return process.returncode, out.decode(errors="replace").strip()


class AgentSandbox:
    """The confinement of the local runner's entrypoint, per step (`confine`)."""

    def __init__(self, settings: Settings, environ: Mapping[str, str], *, data_root: Path,
                 project_root: Path = PROJECT_ROOT, relay: AgentRelay | None = None) -> None:
        self._settings = settings
        self._environ = environ
        self._data_root = data_root.resolve()
        self._project_root = project_root.resolve()
        self.relay = relay or AgentRelay(self._data_root / RELAY_DIR)
        """What the sandboxed steps reach the network through (the service's, or one of this sandbox's own)."""

    @property
    def bwrap(self) -> str | None:
        """The bwrap binary on the service's PATH."""
        return shutil.which("bwrap", path=self._environ.get("PATH") or os.defpath)

    async def describe(self) -> str:
        """One line for `/health`: what confines the local agents, or why nothing does."""
        mode = self._settings.agent_sandbox
        if self._settings.agent_runner != "local":
            return f"none here ({self._settings.agent_runner}: each agent runs in a Job's pod)"
        if mode == "off":
            return "off (AGENT_SANDBOX=off): agents run unconfined"
        found = await probe(self.bwrap)
        if found.works:
            return f"{found.version}: workspace writable, home and data hidden, network only to the model (relay)"
        if mode == "bwrap":
            return f"none ({found.problem}): AGENT_SANDBOX=bwrap refuses every agent; {INSTALL_HINT}"
        return (f"none ({found.problem}): Aider runs unconfined, other agents are refused; "
                f"{INSTALL_HINT}, or AGENT_SANDBOX=off")

    async def confine(self, job: AgentJob, command: list[str], env: dict[str, str], *,
                      program: str | None) -> Confined:
        """`command` (the entrypoint) for `job`, wrapped in the sandbox where one is due.
        `program` is what runs an agent step (`aider`, `command`, …; None for git and test runs)."""
        mode = self._settings.agent_sandbox
        if mode == "off" or job.entrypoint_mode == "git":
            return Confined(command, env)
        bwrap = self.bwrap
        found = await probe(bwrap)
        if found.works and bwrap is not None:
            lease = await self.relay.open(job_name(job), step_routes(self._settings, job, program, env))
            return Confined(self.bwrap_argv(job, bwrap, command, env, lease), self.sandbox_env(job, env, lease),
                            lease=lease)
        who = f"the agent {program}" if job.entrypoint_mode == "agent" else "the project's tests"
        if mode == "auto" and self.shell_free(job, program):
            warning = (f"warning: {found.problem}: {program} runs unconfined (it runs no shell command); "
                       f"{INSTALL_HINT} confines it")
            log.warning("%s", warning)
            return Confined(["sh", "-c", 'printf "%s\\n" "$0"; exec "$@"', warning, *command], env)
        required = "AGENT_SANDBOX=bwrap requires a sandbox" if mode == "bwrap" else "it can run commands"
        refusal = (f"Not started: {who} would run unconfined ({required}), and {found.problem}. "
                   f"Install bubblewrap ({INSTALL_HINT}), or set AGENT_SANDBOX=off to run agents unconfined.")
        log.warning("%s", refusal)
        return Confined([], env, refusal=refusal)

    async def reopen(self, job: AgentJob, env: dict[str, str], *, program: str | None) -> RelayLease | None:
        """The relay of a step whose sandbox is already running (the service restarted and
        re-attaches): its sockets bound again where that sandbox looks. None when it has none."""
        if self._settings.agent_sandbox == "off" or job.entrypoint_mode == "git" or not (await probe(self.bwrap)).works:
            return None
        return await self.relay.open(job_name(job), step_routes(self._settings, job, program, env))

    async def release(self, lease: RelayLease | None) -> None:
        """Close a step's relay sockets (its sandbox has ended, or is no longer watched)."""
        if lease is not None:
            await self.relay.release(lease, running=should_detach())

    async def provide_test_tools(self, job: AgentJob, confined: Confined) -> None:
        """A sandboxed test run that needs pytest gets it installed by the service first (the
        sandbox has no network): `test_tools`. Call it after the hand-over files are written."""
        bwrap = self.bwrap
        if job.entrypoint_mode != "test" or confined.refusal is not None or bwrap is None \
                or confined.argv[:len(SIGNAL_GUARD) + 1] != [*SIGNAL_GUARD, bwrap]:
            return
        said = await provide_pytest(job.workspace.resolve(), self.tools_dir(job), confined.env,
                                    lambda command: self.bwrap_argv(job, bwrap, command, confined.env))
        if said:
            log.info("%s", said)

    def shell_free(self, job: AgentJob, program: str | None) -> bool:
        """Aider with no flag that lets it run commands (`AIDER_ARGS`); a test run never is."""
        if job.entrypoint_mode != "agent" or program != "aider":
            return False
        return not any(arg.split("=", 1)[0] in AIDER_SHELL_FLAGS for arg in self._settings.aider_args)

    def hidden_paths(self) -> list[Path]:
        """What the agent must not see: the service user's home (as the environment says and as
        the system says), DATA_ROOT, the user's runtime directory, container sockets and
        `AGENT_SANDBOX_HIDE` (relative ones under the project directory). Existing paths only,
        never `/`."""
        candidates = [self._environ.get("HOME", ""), _home_of_user(), str(self._data_root),
                      self._environ.get("XDG_RUNTIME_DIR", ""), f"/run/user/{os.getuid()}", *HOST_SOCKETS,
                      *SOCKET_DIRECTORIES,
                      *(str(resolve(os.path.expanduser(path))) for path in self._settings.agent_sandbox_hide)]
        return _existing(candidate for candidate in candidates if candidate)

    def runtime_paths(self, env: Mapping[str, str], command: list[str]) -> list[Path]:
        """What the entrypoint and its agent need to start: the project (the entrypoint, the
        programs installed under `.cache/agents`), the service's Python, every virtualenv of a
        program (Aider's, those under `.cache/agents`, those on the agent's PATH) with the Python
        it was made from, and the files the command and a `LOCAL_AGENT_COMMAND` name."""
        cache = self._project_root / ".cache" / "agents"
        venvs = [*(resolve(path) for path in (self._settings.aider_venv, self._settings.openhands_venv,
                                              self._settings.claude_code_dir)),
                 *(cache.iterdir() if cache.is_dir() else ()),
                 *(Path(entry).parent for entry in env.get("PATH", "").split(os.pathsep) if os.path.isabs(entry))]
        named = [arg for arg in (*command, *self._settings.local_agent_command) if os.path.isabs(arg)]
        return _existing([str(self._project_root), sys.prefix, sys.base_prefix,
                          *(str(path) for venv in venvs for path in _venv_and_base(venv)), *named])

    def writable_paths(self) -> list[Path]:
        """`AGENT_SANDBOX_WRITABLE` that exist (a missing one is not created: it would be empty)."""
        return _existing(str(resolve(os.path.expanduser(path))) for path in self._settings.agent_sandbox_writable)

    def bwrap_argv(self, job: AgentJob, bwrap: str, command: list[str], env: Mapping[str, str],
                   lease: RelayLease | None = None) -> list[str]:
        """The whole command: `env --ignore-signal=TERM bwrap MOUNTS ISOLATION -- env
        --default-signal=TERM [FORWARDER ROUTES] COMMAND` (the module's docstring says why each piece)."""
        workspace = job.workspace.resolve()
        hidden = self.hidden_paths()
        # /tmp is emptied too: what the entrypoint needs from it is read back like from HOME.
        covered = [Path("/tmp"), *hidden]
        readable = _outermost(p for p in self.runtime_paths(env, command) if any(_within(p, h) for h in covered))
        size = str(self._settings.agent_sandbox_tmpfs_mb * 1024 * 1024)
        argv = [*SIGNAL_GUARD, bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--size", size, "--tmpfs", "/tmp"]
        argv += _hide(_outermost(hidden), size)
        for path in readable:
            argv += ["--ro-bind", str(path), str(path)]
        argv += _hide(_outermost(h for h in hidden if any(_within(h, r) and h != r for r in readable)), size)
        if lease is not None and lease.routes.routes:
            argv += ["--ro-bind", str(lease.directory), str(INSIDE)]
            forwarded = [f"{route.port}={INSIDE / route.name}.sock" for route in lease.routes.routes]
            command = [sys.executable, "-I", "-S", str(FORWARDER), *forwarded, "--", *command]
        argv += ["--bind", str(workspace), str(workspace)]
        argv += read_only_git(workspace)
        for path in self.writable_paths():
            argv += ["--bind", str(path), str(path)]
        if job.entrypoint_mode == "test":
            tools = self.tools_dir(job)
            argv += ["--bind", str(tools), str(tools)]
        return [*argv, *ISOLATION, "--chdir", str(workspace), "--", *SIGNAL_RESTORE, *command]

    def sandbox_env(self, job: AgentJob, env: dict[str, str], lease: RelayLease | None = None) -> dict[str, str]:
        """Temporary files in the sandbox's own /tmp; test runs find pytest in the client's tool
        cache (the entrypoint's `JERVIS_TOOLS_DIR`), the one place outside the workspace they may
        write and which outlives the run. The host's proxies are unreachable inside and dropped;
        the relay's routes set what they need (a rewritten URL, the CONNECT proxy, `NO_PROXY`)."""
        confined = {name: value for name, value in env.items() if name not in PROXY_VARIABLES}
        confined.update({name: "/tmp" for name in ("TMPDIR", "TMP", "TEMP") if name in env})
        if lease is not None:
            confined.update(lease.routes.env)
        if job.entrypoint_mode == "test":
            confined["JERVIS_TOOLS_DIR"] = str(self.tools_dir(job))
        return confined

    def tools_dir(self, job: AgentJob) -> Path:
        """`DATA_ROOT/.orchestrator/agent-tools/<client>`, created: on the shared volume, outside
        every workspace, one per client, so one client's tests cannot plant code into another's
        test runs through a shared pytest install."""
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", job.client_id).strip("._")[:40] or "client"
        folder = self._data_root / TOOLS_DIR / f"{slug}-{sha256(job.client_id.encode()).hexdigest()[:8]}"
        folder.mkdir(parents=True, exist_ok=True)
        return folder


def _venv_and_base(folder: Path) -> list[Path]:
    """A virtualenv and the prefix of the Python it was made from (`home = <prefix>/bin`)."""
    try:
        config = (folder / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    homes = re.findall(r"^home\s*=\s*(.+?)\s*$", config, re.MULTILINE)
    return [folder, *(Path(home).resolve().parent for home in homes[:1] if os.path.isabs(home))]


def _hide(paths: Iterable[Path], size: str) -> list[str]:
    """An empty tmpfs of at most `size` bytes over a directory, /dev/null over anything else."""
    argv: list[str] = []
    for path in paths:
        argv += ["--size", size, "--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
    return argv


def _existing(paths: Iterable[str]) -> list[Path]:
    found: list[Path] = []
    for text in paths:
        path = Path(os.path.expanduser(text)).resolve()
        if path != Path("/") and os.path.lexists(path) and path not in found:
            found.append(path)
    return found


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """Without the paths inside another one, shortest first (a parent is mounted before its children)."""
    ordered = sorted(set(paths), key=lambda path: (len(path.parts), str(path)))
    kept: list[Path] = []
    for path in ordered:
        if not any(_within(path, outer) for outer in kept):
            kept.append(path)
    return kept


def _within(path: Path, outer: Path) -> bool:
    return path == outer or path.is_relative_to(outer)


def _home_of_user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return ""
