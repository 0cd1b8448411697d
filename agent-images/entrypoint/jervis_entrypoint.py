#!/usr/bin/env python3
"""Jervis agent entrypoint: one coding-agent step, one git step, or one test run, on a workspace.

The contract is agent-images/CONTRACT.md. The same file runs as the ENTRYPOINT of every agent
image, under the orchestrator's local runner and under the fake Kubernetes API of the tests, so it
uses the standard library only and runs with any Python >= 3.11.

Whatever happens it tries to leave `.jervis/result.json`, because the orchestrator judges a step
from that file and the exit code, never from an agent's word alone: the changed files are what
git sees, and an agent that exits 0 after an error (Aider does) or reports `is_error` in its JSON
(Claude Code does) has failed. A test run says whether the tests passed, failed, or could not run
at all (a missing test tool is not the agent's fault).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

JERVIS_DIR = ".jervis"
RESULT_FILE = "result.json"
TAIL_LINES = 60
AGENT_TYPES = ("aider", "claude", "openhands", "junie", "command")
EXIT_SUCCESS, EXIT_FAILURE, EXIT_BAD_ENVIRONMENT = 0, 1, 2
#: Files agents create by themselves in the workspace root (never the step's work).
AGENT_BYPRODUCTS = (".aider.chat.history.md", ".aider.input.history", ".aider.tags.cache.v4")
#: Past this size the instructions are not put on the command line (Linux caps one argument at 128 KiB).
MAX_PROMPT_ARG = 100_000
FILE_PROMPT = "Read the file .jervis/instructions.md in the current directory and carry out the step it describes."
#: Lines Aider prints for LLM errors (authentication, connection, server) before it exits 0 anyway.
#: Anchored at the line start, so code or prose the model wrote about errors does not match.
AIDER_ERROR = re.compile(r"^(litellm\.\w*(Error|Exception)\b|The API provider's servers are down)")
GIT_TIMEOUT = 120.0
PUSH_TIMEOUT = 600.0
SUMMARY_LIMIT = 4000
TEST_FILE = "test.json"
TEST_TAIL_LINES = 80
TEST_TAIL_CHARS = 8000
#: Seconds between SIGTERM and SIGKILL for a test command's process group (timeout or stop signal).
KILL_GRACE = 5.0
#: Seconds a test command gets after a forwarded SIGTERM/SIGINT; below the local runner's own 5 s
#: grace, so the entrypoint still writes its result before it is killed itself.
STOP_GRACE = 3.0
#: The shell's "cannot execute" and "command not found".
NOT_RUN_EXIT_CODES = (126, 127)
#: Output of a test tool that is not there (`python -m pytest` without pytest, make without the target);
#: any other message (an import error of the project's own code) is a test failure.
NOT_RUN_OUTPUT = re.compile(r"No module named '?pytest'?\s*$|make: \*\*\* No rule to make target [`']test'")


class BadEnvironment(Exception):
    """The entrypoint itself cannot run (missing or invalid input): exit 2."""


@dataclass(frozen=True)
class Config:
    """What the environment asks for, validated once so the rest never re-reads os.environ."""

    workspace: Path
    mode: str
    agent_type: str
    command: list[str] | None
    model: str
    extra_args: list[str]
    allow_git: bool


@dataclass(frozen=True)
class Step:
    """The agent step handed over by the orchestrator in `.jervis/`."""

    instructions: str
    files: list[str]
    agent_files: list[str]
    mcp_config: str | None
    read_files: list[str] = field(default_factory=list)
    """Files the agent should read but not change (the tests that cover the step)."""


@dataclass
class AgentRun:
    """How the agent (or test) process ended; `start_error` is set when it could not even be started."""

    exit_code: int | None
    tail: list[str]
    result_json: dict[str, Any] | None = None
    start_error: str | None = None
    signalled: str | None = None
    timed_out: bool = False
    tokens: tuple[int, int] | None = None
    """Tokens the agent reported using (sent, received), summed over its output; None if it said none."""


@dataclass
class Verdict:
    """The entrypoint's judgement of one agent run, before changed files are added."""

    success: bool
    summary: str
    cost_usd: float | None = None
    claimed_files: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ configuration
def load_config(env: Mapping[str, str]) -> Config:
    """Validate the environment; a bad one is the orchestrator's bug and ends with exit 2."""
    workspace = workspace_from(env)
    if workspace is None:
        raise BadEnvironment("WORKSPACE_PATH must name an existing directory")
    mode = (env.get("JERVIS_MODE") or "agent").strip().lower()
    if mode not in ("agent", "git", "test"):
        raise BadEnvironment(f"JERVIS_MODE must be 'agent', 'git' or 'test', not {mode!r}")
    allow_git = (env.get("ALLOW_GIT") or "").strip().lower() == "true"
    if mode == "git" and not allow_git:
        raise BadEnvironment("git mode needs ALLOW_GIT=true")
    if mode == "test":  # the runner may still pass the step's agent settings: they do not apply
        return Config(workspace=workspace, mode=mode, agent_type="test", command=None, model="", extra_args=[],
                      allow_git=allow_git)
    agent_type = (env.get("AGENT_TYPE") or "").strip().lower()
    if mode == "agent" and agent_type not in AGENT_TYPES:
        raise BadEnvironment(f"AGENT_TYPE must be one of {', '.join(AGENT_TYPES)}, not {agent_type!r}")
    command = argv_from(env, "AGENT_COMMAND")
    if mode == "agent" and agent_type == "command" and not command:
        raise BadEnvironment("AGENT_TYPE=command needs AGENT_COMMAND (a JSON list of strings)")
    return Config(
        workspace=workspace, mode=mode, agent_type=agent_type or "git", command=command,
        model=(env.get("AGENT_MODEL") or "").strip(), extra_args=argv_from(env, "AGENT_EXTRA_ARGS") or [],
        allow_git=allow_git,
    )


def workspace_from(env: Mapping[str, str]) -> Path | None:
    """The workspace directory, or None; used before validation too, to place a failure result."""
    raw = (env.get("WORKSPACE_PATH") or "").strip()
    if not raw:
        return None
    path = Path(raw).resolve()
    return path if path.is_dir() else None


def argv_from(env: Mapping[str, str], name: str) -> list[str] | None:
    """A JSON list of strings from the environment (an argv, so no shell quoting rules apply)."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise BadEnvironment(f"{name} is not valid JSON: {exc}") from exc
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadEnvironment(f"{name} must be a JSON list of strings")
    return value


def load_step(workspace: Path) -> Step:
    """Read `.jervis/instructions.md` (required) and `.jervis/task.json` (optional)."""
    jervis = workspace / JERVIS_DIR
    try:
        instructions = (jervis / "instructions.md").read_text(encoding="utf-8")
    except OSError as exc:
        raise BadEnvironment(f"cannot read {JERVIS_DIR}/instructions.md: {exc}") from exc
    task = read_json_object(jervis / "task.json", required=False)
    mcp_config = task.get("mcp_config")
    return Step(
        instructions=instructions,
        files=string_list(task.get("files")),
        agent_files=string_list(task.get("agent_files")),
        mcp_config=mcp_config if isinstance(mcp_config, str) and mcp_config else None,
        read_files=string_list(task.get("read_files")),
    )


def read_json_object(path: Path, *, required: bool) -> dict[str, Any]:
    """A JSON object from a hand-over file; a missing optional file is an empty object."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        if required:
            raise BadEnvironment(f"{path.name} is missing") from exc
        return {}
    except (OSError, ValueError) as exc:
        raise BadEnvironment(f"cannot read {path.name}: {exc}") from exc
    if not isinstance(value, dict):
        raise BadEnvironment(f"{path.name} must hold a JSON object")
    return value


def text_field(mapping: Mapping[str, Any], key: str) -> str:
    """A string field of agent-written JSON ("" if absent or not a string: agents are untrusted)."""
    value = mapping.get(key)
    return value if isinstance(value, str) else ""


def string_list(value: Any) -> list[str]:
    """The strings of a JSON list (anything else is ignored: hand-over files are advisory here)."""
    return [item for item in value if isinstance(item, str) and item] if isinstance(value, list) else []


# --------------------------------------------------------------------------- git
def git(workspace: Path, *args: str, timeout: float = GIT_TIMEOUT, read_only: bool = False,
        env: Mapping[str, str] | None = None, input_text: str | None = None, raw_paths: bool = False,
        ) -> subprocess.CompletedProcess[str]:
    """Run git on the workspace. `safe.directory` because the volume may belong to another uid;
    read-only calls take no optional locks, so `status` never rewrites the index under an agent.
    `env` adds variables (a temporary index); `input_text` is fed to stdin (else /dev/null);
    `raw_paths` decodes and encodes with surrogateescape, so a path git prints that is not UTF-8
    goes back to git unchanged (such text must not reach result.json: see `printable`)."""
    environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    if read_only:
        environment["GIT_OPTIONAL_LOCKS"] = "0"
    return subprocess.run(
        # hooks and fsmonitor programs of the workspace's config are the agent's: never run them here
        ["git", "-c", "safe.directory=*", "-c", "core.quotepath=off", "-c", "core.hooksPath=/dev/null",
         "-c", "core.fsmonitor=false", *args],
        cwd=workspace, env=environment, capture_output=True, text=True,
        encoding="utf-8" if raw_paths else None, errors="surrogateescape" if raw_paths else "replace",
        timeout=timeout, input=input_text, stdin=subprocess.DEVNULL if input_text is None else None, check=False,
    )


class GitError(RuntimeError):
    """A git command failed; the message carries git's own stderr."""


def git_ok(workspace: Path, *args: str, timeout: float = GIT_TIMEOUT, env: Mapping[str, str] | None = None,
           input_text: str | None = None, raw_paths: bool = False) -> str:
    """stdout of a git command that must succeed."""
    try:
        done = git(workspace, *args, timeout=timeout, env=env, input_text=input_text, raw_paths=raw_paths)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(printable(f"git {' '.join(args)}: {exc}")) from exc
    if done.returncode != 0:
        raise GitError(printable(f"git {' '.join(args)}: {(done.stderr or done.stdout).strip()}"))
    return done.stdout


def printable(text: str) -> str:
    """`text` without lone surrogates (a path that is not UTF-8), which JSON output cannot encode."""
    return text.encode("utf-8", errors="replace").decode("utf-8")


def is_git_repo(workspace: Path) -> bool:
    """True only when the workspace is the top level of a work tree (paths are then repo-relative)."""
    try:
        done = git(workspace, "rev-parse", "--show-toplevel", read_only=True)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and Path(done.stdout.strip()).resolve() == workspace.resolve()


def git_snapshot(workspace: Path) -> dict[str, str]:
    """Dirty paths -> status code and content digest, so a file dirty before the step but changed
    again by it is still seen, and an untracked or deleted file counts like any other change."""
    done = git(workspace, "status", "--porcelain=v1", "-z", "--untracked-files=all", read_only=True)
    if done.returncode != 0:
        raise GitError(f"git status: {done.stderr.strip()}")
    state: dict[str, str] = {}
    entries = iter(done.stdout.split("\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        state[path] = f"{code}:{digest(workspace / path)}"
        if code[0] in "RC":  # the next entry is the source of a rename or copy
            source = next(entries, "")
            if code[0] == "R" and source:
                state[source] = "R:moved-away"
    return state


def digest(path: Path) -> str:
    """Content fingerprint of a working-tree path (a deleted path has none)."""
    if path.is_symlink():
        return "link:" + os.readlink(path)
    if path.is_file():
        sha = hashlib.sha1()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
        return sha.hexdigest()
    return "dir" if path.is_dir() else "deleted"


def changed_between(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Paths whose status or content differs between two snapshots."""
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))


def is_reportable(path: str, agent_files: list[str]) -> bool:
    """Changed files never include our hand-over directory, the orchestrator's agent files or the
    agents' own housekeeping files (a listed directory excludes everything below it)."""
    clean = path.strip("/")
    excluded = [JERVIS_DIR, *AGENT_BYPRODUCTS, *(f.strip("/") for f in agent_files)]
    return not any(clean == name or clean.startswith(name + "/") for name in excluded if name)


# -------------------------------------------------------------------- agent argv
def agent_argv(config: Config, step: Step, in_git: bool) -> list[str]:
    """The non-interactive command line of each agent (AGENT_COMMAND replaces it entirely)."""
    if config.command:
        return [*config.command, *config.extra_args] if config.agent_type != "command" else config.command
    builders = {"aider": aider_argv, "claude": claude_argv, "openhands": openhands_argv, "junie": junie_argv}
    return [*builders[config.agent_type](config, step, in_git), *config.extra_args]


def prompt_arg(step: Step) -> str:
    """The instructions as one argument, or a pointer to the file when they are too long for argv."""
    return step.instructions if len(step.instructions.encode()) <= MAX_PROMPT_ARG else FILE_PROMPT


def aider_argv(config: Config, step: Step, in_git: bool) -> list[str]:
    """Aider never commits (the orchestrator does, after approval) and keeps its history in .jervis/.
    `--no-gitignore`: it must not edit the repository's .gitignore; `--no-git` outside a repository,
    or `--yes-always` would let it run `git init`. With `--yes-always` it would also run the shell
    commands it suggests and fetch URLs it sees in the instructions: both off (the orchestrator runs
    the tests). It streams: a stopped agent then closes its connection, and the model server stops
    generating (a non-streamed request runs to its end on a local server, holding it for the next
    caller). One message per process, so the chat history is never summarised: past
    `--max-chat-history-tokens` (2,048 by default for a 32k model) Aider summarises it with the model
    after the answer, and waits for that before it exits (two minutes per attempt on the embedded
    model, holding its only slot). The tests covering the step are given read-only (`--read`). Edit
    format and repository map come from AGENT_EXTRA_ARGS (the service's AIDER_ARGS)."""
    argv = ["aider", "--message-file", f"{JERVIS_DIR}/instructions.md", "--yes-always", "--no-auto-commits",
            "--no-dirty-commits", "--no-pretty", "--no-check-update", "--no-analytics",
            "--no-show-model-warnings", "--no-show-release-notes", "--no-gitignore", "--no-fancy-input",
            "--no-suggest-shell-commands", "--no-detect-urls", "--no-restore-chat-history",
            "--chat-history-file", f"{JERVIS_DIR}/aider.chat.history.md",
            "--input-history-file", f"{JERVIS_DIR}/aider.input.history",
            "--max-chat-history-tokens", str(SUMMARY_NEVER_TOKENS)]
    if not in_git:
        argv.append("--no-git")
    if config.model:
        argv += ["--model", config.model,
                 "--model-metadata-file", str(aider_model_metadata(config.workspace, config.model)),
                 "--model-settings-file", str(aider_model_settings(config.workspace, step))]
    for path in step.read_files:
        if path not in step.files and (config.workspace / path).is_file():
            argv += ["--read", path]
    return [*argv, *step.files]


#: A chat-history budget no single step's conversation reaches: Aider never summarises it.
SUMMARY_NEVER_TOKENS = 1_000_000
#: What Aider is told of the model when nothing else knows it: a context that holds a step, no price.
AIDER_CONTEXT_TOKENS = 32768


def aider_model_metadata(workspace: Path, model: str) -> Path:
    """A model-metadata file naming the agent's model, in our own `.jervis/`. Aider otherwise looks
    the model up in litellm's price list, which it downloads from GitHub on every start when its
    cache holds nothing (offline: a 5 s timeout, or a hang where a firewall drops the packets)."""
    context = os.environ.get("AGENT_CONTEXT_TOKENS", "").strip()
    tokens = int(context) if context.isdigit() else AIDER_CONTEXT_TOKENS
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    metadata = {model: {"max_input_tokens": tokens, "max_tokens": tokens, "max_output_tokens": min(tokens, 8192),
                        "input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                        "litellm_provider": provider, "mode": "chat"}}
    path = own_dir(workspace, JERVIS_DIR) / "aider.model-metadata.json"
    path.write_text(json.dumps(metadata), encoding="utf-8")
    return path


#: Bounds of one Aider answer, in tokens: the answer to a one-line change still needs room for the
#: edit format's fences and a sentence; the upper one is Aider's own default cap.
AIDER_MIN_OUTPUT_TOKENS = 1536
AIDER_MAX_OUTPUT_TOKENS = 8192
#: Bytes of source per token (code in a BPE vocabulary: 3-4), and room for what is added.
BYTES_PER_TOKEN = 3


def aider_output_cap(workspace: Path, files: Sequence[str]) -> int:
    """How long one answer may be: twice the files it edits (the whole-file format repeats each
    file, a change adds to it) plus 1,024 tokens for a new file or an explanation, within the
    bounds. A small model that loops on a 98-line file otherwise writes for its whole default cap
    (8,192 tokens, ten minutes here) before anything can judge it; AGENT_MAX_OUTPUT_TOKENS overrides."""
    override = os.environ.get("AGENT_MAX_OUTPUT_TOKENS", "").strip()
    if override.isdigit() and int(override) > 0:
        return int(override)
    size = 0
    for name in files:
        with contextlib.suppress(OSError):
            size += (workspace / name).stat().st_size
    cap = 2 * (size // BYTES_PER_TOKEN) + 1024
    return max(AIDER_MIN_OUTPUT_TOKENS, min(AIDER_MAX_OUTPUT_TOKENS, cap))


def aider_model_settings(workspace: Path, step: Step) -> Path:
    """Aider's model settings for every model (`aider/extra_params`): the answer's cap
    (`aider_output_cap`), which Aider passes to the model as `max_tokens`. An answer cut there is
    not applied (Aider reports the output limit), so the step fails and is retried, told why."""
    cap = aider_output_cap(workspace, step.files)
    path = own_dir(workspace, JERVIS_DIR) / "aider.model-settings.yml"
    path.write_text(f"- name: aider/extra_params\n  extra_params:\n    max_tokens: {cap}\n", encoding="utf-8")
    log(f"aider: answers capped at {cap} tokens ({len(step.files)} file(s) to edit)")
    return path


#: Claude Code's built-in tools an agent step gets: reading, editing, writing files and a shell.
#: The rest (web, subagents, notebooks, to-do lists) add ~60 KB of tool descriptions to every
#: request (measured: 76 KB → 13 KB a request) that a local model has to read each turn.
CLAUDE_TOOLS = "Bash,Read,Edit,Write"


def claude_argv(config: Config, step: Step, in_git: bool) -> list[str]:
    """Claude Code in print mode with a JSON result (its `is_error`, cost and usage are read from
    it), with `CLAUDE_TOOLS` unless AGENT_EXTRA_ARGS names its own `--tools`."""
    argv = ["claude", "-p", prompt_arg(step), "--output-format", "json", "--permission-mode", "bypassPermissions"]
    if not any(arg == "--tools" or arg.startswith("--tools=") for arg in config.extra_args):
        argv += ["--tools", CLAUDE_TOOLS]
    mcp = mcp_config_path(config.workspace, step)
    if mcp is not None:
        argv += ["--mcp-config", str(mcp)]
    if config.model:
        argv += ["--model", config.model]
    return argv


#: The OpenHands step runner (SDK), beside this file in the images and in the repository.
OPENHANDS_RUNNER = Path(__file__).resolve().with_name("openhands_agent.py")


def openhands_argv(config: Config, step: Step, in_git: bool) -> list[str]:
    """OpenHands' agent through its SDK: `openhands_agent.py` (beside this file) run by the Python of
    the OpenHands virtualenv (`OPENHANDS_PYTHON`; 3.12 or later), task from the file, LLM from the
    LLM_* variables. Not the `openhands` CLI: it needs `security_risk` in every tool call (a small
    model leaves it out, nothing is written and it still exits 0), tries a git clone and an update
    check at start, and its exit code does not say whether the agent finished."""
    python = os.environ.get("OPENHANDS_PYTHON", "").strip() or "python3"
    return [python, str(OPENHANDS_RUNNER), f"{JERVIS_DIR}/instructions.md"]


def junie_argv(config: Config, step: Step, in_git: bool) -> list[str]:
    """The Junie CLI, one batch task on this project, without its self-update check."""
    argv = ["junie", "--task", prompt_arg(step), "--project", str(config.workspace), "--skip-update-check"]
    mcp = mcp_config_path(config.workspace, step)
    if mcp is not None:
        argv += ["--mcp-location", str(mcp)]
    if config.model:
        argv += ["--model", config.model]
    return argv


def mcp_config_path(workspace: Path, step: Step) -> Path | None:
    """The MCP config named in task.json, if it exists (a missing one would abort the agent)."""
    if step.mcp_config is None:
        return None
    path = (workspace / step.mcp_config).resolve()
    if path.is_file():
        return path
    log(f"MCP config {step.mcp_config} not found; running without it")
    return None


def agent_env(config: Config, base: Mapping[str, str]) -> dict[str, str]:
    """The agent's environment: everything passed through, plus per-agent defaults it needs to run
    unattended (all overridable by the pod's own values)."""
    env = dict(base)
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-map download at import time
    if config.agent_type == "claude" and hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("IS_SANDBOX", "1")  # claude refuses bypassPermissions as root otherwise
    if config.agent_type == "openhands" and config.model:
        env.setdefault("LLM_MODEL", config.model)
    # The Job passes the local LLM as OLLAMA_URL; litellm inside aider / OpenHands reads these names.
    if base.get("OLLAMA_URL") and config.agent_type in ("aider", "openhands"):
        env.setdefault("OLLAMA_API_BASE", base["OLLAMA_URL"])
        if config.agent_type == "openhands":
            env.setdefault("LLM_BASE_URL", base["OLLAMA_URL"])
    return env


# ------------------------------------------------------------------- agent process
class _Forwarder:
    """Passes SIGTERM/SIGINT on to the agent (a pod's PID 1 gets the signal, not the agent), so the
    agent ends first and the entrypoint still writes its result.

    With `group`, the signal goes to the child's whole process group (a test command's own children
    included), and what still runs STOP_GRACE seconds later is killed."""

    def __init__(self, *, group: bool = False) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.received: str | None = None
        self.group = group
        self.killer: threading.Timer | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received = signal.Signals(signum).name
        if self.process is None:
            return
        if not self.group:
            if self.process.poll() is None:
                self.process.send_signal(signum)
            return
        signal_group(self.process, signum)
        if self.killer is None:
            self.killer = threading.Timer(STOP_GRACE, signal_group, (self.process, signal.SIGKILL))
            self.killer.daemon = True
            self.killer.start()

    def cancel(self) -> None:
        """No late SIGKILL once the process group has been dealt with."""
        if self.killer is not None:
            self.killer.cancel()


def signal_group(process: subprocess.Popen[str], signum: int) -> bool:
    """Signal the process group a child leads (started with `start_new_session`); False when the
    group is already empty (or, never expected, not ours: a signal must not crash the entrypoint)."""
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def run_agent(argv: list[str], workspace: Path, env: Mapping[str, str]) -> AgentRun:
    """Run the agent, streaming its output line by line (the Job's logs) and keeping the tail."""
    log(f"running {argv[0]} ({len(argv) - 1} argument(s))")
    forwarder = _Forwarder()
    previous = {sig: signal.signal(sig, forwarder) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            process = subprocess.Popen(
                argv, cwd=workspace, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1,
            )
        except OSError as exc:
            return AgentRun(exit_code=None, tail=[], start_error=f"{type(exc).__name__}: {exc}")
        forwarder.process = process
        tail, result_json, tokens = pump(process)
        exit_code = process.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return AgentRun(exit_code=exit_code, tail=tail, result_json=result_json, signalled=forwarder.received,
                    tokens=tokens)


def pump(process: subprocess.Popen[str], tail_lines: int = TAIL_LINES,
         ) -> tuple[list[str], dict[str, Any] | None, tuple[int, int] | None]:
    """Echo each output line, keep the last `tail_lines`, remember the last JSON `result` line
    (Claude Code's final report is one such line) and add up the tokens the agent reports
    (Aider prints "Tokens: 2.6k sent, 271 received." after every model call; Claude Code's
    result carries its `usage`)."""
    assert process.stdout is not None
    tail: deque[str] = deque(maxlen=tail_lines)
    result_json: dict[str, Any] | None = None
    sent = received = 0
    seen = False
    for raw in process.stdout:
        line = raw.rstrip("\r\n")
        print(line, flush=True)
        tail.append(line)
        parsed = json_result_line(line)
        if parsed is not None:
            result_json = parsed
        if (used := reported_tokens(line)) is not None:
            sent, received, seen = sent + used[0], received + used[1], True
    return list(tail), result_json, (sent, received) if seen else result_tokens(result_json)


AIDER_TOKENS = re.compile(r"^\s*Tokens:\s*([\d.,]+)\s*(k?)\s+sent,\s*([\d.,]+)\s*(k?)\s+received", re.IGNORECASE)


def reported_tokens(line: str) -> tuple[int, int] | None:
    """(sent, received) from an agent's token line ("Tokens: 2.6k sent, 1,271 received."), else None."""
    match = AIDER_TOKENS.match(line)
    if match is None:
        return None

    def count(number: str, thousands: str) -> int:
        value = float(number.replace(",", ""))
        return round(value * 1000) if thousands else round(value)

    return count(match.group(1), match.group(2)), count(match.group(3), match.group(4))


def result_tokens(report: dict[str, Any] | None) -> tuple[int, int] | None:
    """(sent, received) from the `usage` of Claude Code's JSON result: every prompt token (cache
    writes and reads included) and the output tokens, summed over its turns; None without one."""
    usage = (report or {}).get("usage")
    if not isinstance(usage, dict):
        return None

    def count(*names: str) -> int:
        return sum(value for name in names if isinstance(value := usage.get(name), int) and not isinstance(value, bool))

    return count("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"), count("output_tokens")


def json_result_line(line: str) -> dict[str, Any] | None:
    """The line as a JSON object of `"type": "result"`, else None."""
    text = line.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) and value.get("type") == "result" else None


# -------------------------------------------------------------------- judgement
def read_own_result(workspace: Path) -> dict[str, Any] | None:
    """The agent's own `.jervis/result.json`, if it wrote a valid one."""
    try:
        value = json.loads((workspace / JERVIS_DIR / RESULT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def judge(agent_type: str, run: AgentRun, own: dict[str, Any] | None) -> Verdict:
    """Success needs a clean exit, no error in the agent's own report, and no failure the agent
    reported itself; the summary prefers the agent's own words."""
    if run.start_error is not None:
        return Verdict(False, f"Agent {agent_type} could not be started: {run.start_error}")
    verdict = judge_output(agent_type, run)
    own_summary = text_field(own or {}, "summary")
    if own is not None:
        verdict.claimed_files = string_list(own.get("changedFiles"))
        if own.get("success") is not True:
            verdict.success = False
        if own_summary.strip():
            verdict.summary = own_summary.strip()
    elif agent_type == "command":  # a command agent must report (spec §10.4); the others never do
        verdict = Verdict(False, "Agent exited 0 but wrote no .jervis/result.json" if run.exit_code == 0
                          else "Agent wrote no .jervis/result.json")
    if run.signalled:
        verdict.success = False
        verdict.summary = f"Agent stopped by {run.signalled}: {verdict.summary}"
    if run.exit_code not in (0, None):
        verdict.success = False
        verdict.summary = f"{verdict.summary} (agent exited with code {run.exit_code})"
    return verdict


def judge_output(agent_type: str, run: AgentRun) -> Verdict:
    """What the agent's own output says, before its result file and exit code are considered."""
    if agent_type == "claude":
        return judge_claude(run.result_json)
    if agent_type == "aider":
        return judge_aider(run.tail)
    if agent_type == "openhands":
        return judge_openhands(run.result_json)
    return Verdict(run.exit_code == 0, f"Agent {agent_type} finished" if run.exit_code == 0 else
                   f"Agent {agent_type} failed")


def judge_openhands(report: dict[str, Any] | None) -> Verdict:
    """The runner's last line (`openhands_agent.py`): only `status: finished` without `is_error` is a
    success; an error, a stuck agent, too many steps or a stop are failures, in its own words."""
    if report is None:
        return Verdict(False, "OpenHands printed no result")
    summary = text_field(report, "summary").strip()
    if report.get("status") == "finished" and report.get("is_error") is False:
        return Verdict(True, summary or "OpenHands finished")
    return Verdict(False, summary or f"OpenHands ended as {text_field(report, 'status') or 'unknown'}")


def judge_claude(report: dict[str, Any] | None) -> Verdict:
    """Claude Code's JSON result: `subtype: success` is not enough, `is_error` must be false."""
    if report is None:
        return Verdict(False, "Claude Code printed no JSON result")
    cost = report.get("total_cost_usd")
    cost_usd = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
    text = text_field(report, "result")
    ok = report.get("is_error") is False and report.get("subtype") == "success"
    if ok:
        return Verdict(True, text.strip() or "Claude Code finished", cost_usd)
    reason = text.strip() or str(report.get("subtype") or "error")
    return Verdict(False, f"Claude Code reported an error: {reason}", cost_usd)


def judge_aider(tail: list[str]) -> Verdict:
    """Aider exits 0 after authentication and connection errors; its output tells."""
    errors = [line.strip() for line in tail if AIDER_ERROR.match(line.strip())]
    if errors:
        return Verdict(False, f"Aider reported an error: {errors[-1][:500]}")
    return Verdict(True, "Aider finished")


# ------------------------------------------------------------------ agent mode
def run_agent_mode(config: Config, step: Step) -> dict[str, Any]:
    """Snapshot, run the agent, and describe what it did (changed files from git, not its claim)."""
    workspace = config.workspace
    drop_stale_result(workspace)  # a stale result is not this step's
    in_git = is_git_repo(workspace)
    before = git_snapshot(workspace) if in_git else {}
    run = run_agent(agent_argv(config, step, in_git), workspace, agent_env(config, os.environ))
    # AGENT_COMMAND replaces the agent, so its output is not the agent's: it is judged as a command
    # (its own result.json decides), whatever type it stands in for.
    verdict = judge("command" if config.command else config.agent_type, run, read_own_result(workspace))
    changed = changed_files(workspace, before, verdict.claimed_files) if in_git else verdict.claimed_files
    return {
        "success": verdict.success,
        "summary": verdict.summary[:SUMMARY_LIMIT],
        "changedFiles": [path for path in changed if is_reportable(path, step.agent_files)],
        "exitCode": run.exit_code,
        "costUsd": verdict.cost_usd,
        "logTail": "\n".join(run.tail),
        "agent": config.agent_type,
        **({"tokens": {"sent": run.tokens[0], "received": run.tokens[1]}} if run.tokens else {}),
    }


def changed_files(workspace: Path, before: Mapping[str, str], claimed: list[str]) -> list[str]:
    """What git shows changed since the snapshot; if git fails after the agent ran, the agent's
    claim (logged as such) rather than losing the whole result."""
    try:
        return changed_between(before, git_snapshot(workspace))
    except (GitError, OSError, subprocess.TimeoutExpired) as exc:
        log(f"git status failed after the agent ran ({exc}); reporting the agent's own list")
        return claimed


# -------------------------------------------------------------------- git mode
@dataclass(frozen=True)
class PlannedCommit:
    """One commit of a series (`commits` in git.json): the work of one goal."""

    message: str
    trailer: str
    files: list[str]
    tree: str | None
    """A tree object holding the workspace as it was after the goal; None: the working tree now."""


@dataclass(frozen=True)
class GitPlan:
    """`.jervis/git.json`."""

    action: str
    branch: str
    message: str
    files: list[str]
    trailer: str
    remote: str
    commits: tuple[PlannedCommit, ...] = ()
    """A series of commits, one per goal; when given, message, trailer and files above are not used."""

    @property
    def changed_files(self) -> list[str]:
        """The files a commit step reports: its own, or those of all commits of the series."""
        if not self.commits:
            return self.files
        return list(dict.fromkeys(path for planned in self.commits for path in planned.files))


#: A full SHA-1 or SHA-256 object name.
OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
#: How far back `find_commit` looks for a trailer.
TRAILER_DEPTH = 50


def load_git_plan(workspace: Path) -> GitPlan:
    """Validate `.jervis/git.json`; a missing field is an orchestrator bug (exit 2)."""
    plan = read_json_object(workspace / JERVIS_DIR / "git.json", required=True)
    action = plan.get("action")
    if action not in ("commit", "push"):
        raise BadEnvironment("git.json: action must be 'commit' or 'push'")
    branch = plan.get("branch")
    if not isinstance(branch, str) or not branch.strip() or branch.startswith("-"):
        raise BadEnvironment("git.json: branch must be a branch name")
    remote = plan.get("remote") or "origin"
    if not isinstance(remote, str) or remote.startswith("-"):
        raise BadEnvironment("git.json: remote must be a remote name")
    commits = planned_commits(plan.get("commits")) if action == "commit" else ()
    message, trailer = plan.get("message") or "", plan.get("trailer") or ""
    if action == "commit" and not commits and not (isinstance(message, str) and message.strip()):
        raise BadEnvironment("git.json: a commit needs a message")
    if action == "commit" and not commits and not (isinstance(trailer, str) and trailer.strip()):
        raise BadEnvironment("git.json: a commit needs a trailer (it makes the commit idempotent)")
    return GitPlan(action, branch.strip(), str(message).strip(), string_list(plan.get("files")),
                   str(trailer).strip(), remote, commits)


def planned_commits(value: Any) -> tuple[PlannedCommit, ...]:
    """`commits` of git.json: absent, null or [] is no series; anything malformed is an orchestrator bug."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise BadEnvironment("git.json: commits must be a list of objects")
    commits: list[PlannedCommit] = []
    for number, item in enumerate(value):
        where = f"git.json: commits[{number}]"
        if not isinstance(item, dict):
            raise BadEnvironment(f"{where} must be an object")
        message, trailer, files, tree = (item.get(key) for key in ("message", "trailer", "files", "tree"))
        if not (isinstance(message, str) and message.strip()):
            raise BadEnvironment(f"{where} needs a message")
        if not (isinstance(trailer, str) and trailer.strip()) or len(trailer.strip().splitlines()) != 1:
            raise BadEnvironment(f"{where} needs a trailer of one line (it makes the commit idempotent)")
        if not isinstance(files, list) or not all(isinstance(path, str) and path for path in files):
            raise BadEnvironment(f"{where}: files must be a list of paths")
        if tree is not None and not (isinstance(tree, str) and OBJECT_ID.fullmatch(tree.lower())):
            raise BadEnvironment(f"{where}: tree must be null or a tree object id")
        commits.append(PlannedCommit(message.strip(), trailer.strip(), list(dict.fromkeys(files)),
                                     tree.lower() if tree is not None else None))
    trailers = [planned.trailer for planned in commits]
    if len(set(trailers)) != len(trailers):
        raise BadEnvironment("git.json: commits need a trailer each of their own")
    return tuple(commits)


def run_git_mode(config: Config, plan: GitPlan) -> dict[str, Any]:
    """Commit or push; a git failure is a failed step (exit 1), not a crash."""
    try:
        if plan.action == "commit":
            return commit_series(config.workspace, plan) if plan.commits else commit(config.workspace, plan)
        return push(config.workspace, plan)
    except GitError as exc:
        result: dict[str, Any] = {"success": False, "summary": str(exc)[:SUMMARY_LIMIT]}
        if plan.action == "commit":
            result.update(changedFiles=plan.changed_files, commitSha=None)
            if plan.commits:
                result["commits"] = []
        return result


def switch_branch(workspace: Path, branch: str) -> None:
    """Check out `branch`, creating it from HEAD if missing (local changes travel along)."""
    current = git_ok(workspace, "rev-parse", "--abbrev-ref", "HEAD").strip()
    if current == branch:
        return
    if git(workspace, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").returncode == 0:
        git_ok(workspace, "checkout", branch)
    else:
        git_ok(workspace, "checkout", "-b", branch)


def find_commit(workspace: Path, trailer: str) -> str | None:
    """The sha of a commit among the last 50 whose message has `trailer` as a line."""
    return find_commits(workspace, [trailer]).get(trailer)


def find_commits(workspace: Path, trailers: list[str], depth: int = TRAILER_DEPTH) -> dict[str, str]:
    """Each of `trailers` found as a line of a message among the last `depth` commits -> the newest such sha."""
    wanted, found = set(trailers), dict[str, str]()
    log_text = git_ok(workspace, "log", "-n", str(depth), "--format=%H%x00%B%x01")
    for record in log_text.split("\x01"):
        sha, _, body = record.strip().partition("\x00")
        for line in body.splitlines() if sha else ():
            if line.strip() in wanted:
                found.setdefault(line.strip(), sha)
    return found


def identity_args(workspace: Path) -> list[str]:
    """A fallback identity when git's configuration has none (a fresh pod; git refuses to commit
    without one). GIT_AUTHOR_*/GIT_COMMITTER_* in the pod's environment still take precedence."""
    args: list[str] = []
    for key, fallback in (("user.name", "Jervis"), ("user.email", "jervis@localhost")):
        if not git(workspace, "config", key).stdout.strip():
            args += ["-c", f"{key}={fallback}"]
    return args


def commit(workspace: Path, plan: GitPlan) -> dict[str, Any]:
    """Commit exactly the listed files once per trailer: a re-run reports the earlier commit."""
    if not plan.files:
        return {"success": False, "summary": "No files to commit", "changedFiles": [], "commitSha": None}
    switch_branch(workspace, plan.branch)
    existing = find_commit(workspace, plan.trailer)
    if existing is not None:
        return {"success": True, "summary": f"Already committed as {existing[:12]} on {plan.branch}",
                "changedFiles": plan.files, "commitSha": existing}
    git_ok(workspace, "add", "-A", "--", *plan.files)
    git_ok(workspace, *identity_args(workspace), "commit", "-m", f"{plan.message}\n\n{plan.trailer}",
           "--", *plan.files)
    sha = git_ok(workspace, "rev-parse", "HEAD").strip()
    return {"success": True, "summary": f"Committed {len(plan.files)} file(s) as {sha[:12]} on {plan.branch}",
            "changedFiles": plan.files, "commitSha": sha}


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


def push(workspace: Path, plan: GitPlan) -> dict[str, Any]:
    """Push the branch to its namesake on the remote; never forced."""
    remotes = git_ok(workspace, "remote").split()
    if plan.remote not in remotes:
        return {"success": False, "summary": f"No git remote '{plan.remote}' is configured"}
    git_ok(workspace, "push", plan.remote, f"{plan.branch}:{plan.branch}", timeout=PUSH_TIMEOUT)
    return {"success": True, "summary": f"Pushed {plan.branch} to {plan.remote}"}


# ------------------------------------------------------------------- test mode
@dataclass(frozen=True)
class PlannedTests:
    """`.jervis/test.json`: the command that runs the project's tests, and how long it may take."""

    argv: list[str]
    label: str
    timeout: float | None


def load_test_plan(workspace: Path) -> PlannedTests:
    """Validate `.jervis/test.json`; a missing or malformed one is an orchestrator bug (exit 2).
    A string is a shell command line, a list an argv (no quoting rules)."""
    plan = read_json_object(workspace / JERVIS_DIR / TEST_FILE, required=True)
    command = plan.get("command")
    if isinstance(command, str) and command.strip():
        argv, label = ["sh", "-c", command], " ".join(command.split())
    elif isinstance(command, list) and command and all(isinstance(arg, str) for arg in command) and command[0]:
        argv, label = list(command), shlex.join(command)
    else:
        raise BadEnvironment("test.json: command must be a non-empty string or a non-empty list of strings")
    timeout = plan.get("timeout_seconds")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout < float("inf")):
        raise BadEnvironment("test.json: timeout_seconds must be a positive number")
    return PlannedTests(argv, label[:200], None if timeout is None else float(timeout))


def run_test_mode(config: Config, plan: PlannedTests) -> dict[str, Any]:
    """Run the tests and say whether they passed, failed, or could not run at all."""
    workspace = config.workspace
    drop_stale_result(workspace)  # a stale result is not this run's
    env = testing_env(os.environ)
    missing = provide_pytest(plan.argv, workspace, env)
    run = missing or run_tests(plan.argv, workspace, env, plan.timeout)
    outcome, summary = judge_tests(run, plan)
    return {
        "success": outcome == "passed",
        "summary": summary[:SUMMARY_LIMIT],
        "changedFiles": [],
        "exitCode": run.exit_code,
        "costUsd": None,
        "logTail": bounded_tail(run.tail),
        "agent": "test",
        "testOutcome": outcome,
    }


def testing_env(base: Mapping[str, str]) -> dict[str, str]:
    """Everything passed through, plus `CI=true` (overridable): test runners then neither watch for
    changes nor wait for a terminal (Jest's watch mode would never end). Python writes no byte
    code: a `.pyc` of a module the next attempt rewrites within the same second at the same size
    would be taken for current (its check is mtime and size), and the tests would judge old code."""
    return {"CI": "true", "PYTHONDONTWRITEBYTECODE": "1", **base}


#: What `pip install` gets when the test command's Python has no pytest (JERVIS_PYTEST_SPEC overrides;
#: pip's own PIP_INDEX_URL / PIP_FIND_LINKS / PIP_NO_INDEX choose where from).
PYTEST_SPEC = "pytest"
PYTEST_INSTALL_TIMEOUT = 300.0
PROBE_TIMEOUT = 60.0
#: Prints the interpreter's version, then fails when it cannot import pytest.
PYTEST_PROBE = "import sys; print('%d.%d' % sys.version_info[:2], flush=True); import pytest"
INSTALLED_MARKER = ".jervis-installed"


def provide_pytest(argv: list[str], workspace: Path, env: dict[str, str]) -> AgentRun | None:
    """For `<python> -m pytest …` with a Python that cannot import pytest, install pytest for the run —
    never into the project or its virtualenv: into a cache directory outside the workspace (one per
    Python version, reused, installs serialised by a file lock), put first on `PYTHONPATH` in `env`.
    Returns a not-run AgentRun when pytest is missing and cannot be installed (offline), else None."""
    if len(argv) < 3 or argv[1:3] != ["-m", "pytest"]:
        return None
    python = argv[0]
    probe = probe_python(python, workspace, env)
    if probe is None:
        return None  # the interpreter cannot even start: run_tests says so
    version, has_pytest = probe
    if has_pytest:
        return None
    spec = (env.get("JERVIS_PYTEST_SPEC") or "").strip() or PYTEST_SPEC
    target = tools_dir(env, workspace) / f"pytest-py{version}"
    try:
        installed, output = install_pytest(python, version, spec, target, env)
    except OSError as exc:
        installed, output = False, [f"{type(exc).__name__}: {exc}"]
    if not installed:
        reason = next((line for line in reversed(output) if line.strip()), "no output")
        log(f"pytest is not installed for {python} and installing {spec} failed: {reason}")
        return AgentRun(exit_code=None, tail=output[-TEST_TAIL_LINES:],
                        start_error=f"pytest is not installed for {python} and installing it failed: {reason}")
    env["PYTHONPATH"] = os.pathsep.join(part for part in (str(target), env.get("PYTHONPATH", "")) if part)
    return None


def probe_python(python: str, workspace: Path, env: Mapping[str, str]) -> tuple[str, bool] | None:
    """The interpreter's `major.minor` and whether it imports pytest (from the workspace, as `-m` would);
    None when it cannot be run or says no version."""
    try:
        done = subprocess.run([python, "-c", PYTEST_PROBE], cwd=workspace, env=dict(env), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, errors="replace", timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = done.stdout.strip().splitlines()[:1]
    if not version or not re.fullmatch(r"\d+\.\d+", version[0]):
        return None
    return version[0], done.returncode == 0


def tools_dir(env: Mapping[str, str], workspace: Path) -> Path:
    """`$JERVIS_TOOLS_DIR`, else `$XDG_CACHE_HOME/jervis` or `~/.cache/jervis`; never inside the
    workspace (the tools must not become part of the user's project), the system's temp dir then."""
    configured = (env.get("JERVIS_TOOLS_DIR") or "").strip()
    if configured:
        folder = Path(configured)
    else:
        cache = (env.get("XDG_CACHE_HOME") or "").strip()
        home = (env.get("HOME") or "").strip()
        folder = Path(cache) / "jervis" if cache else Path(home or "/tmp") / ".cache" / "jervis"
    folder = folder.resolve()
    if folder == workspace.resolve() or workspace.resolve() in folder.parents:
        folder = Path("/tmp") / "jervis-tools"
    return folder


def install_pytest(python: str, version: str, spec: str, target: Path,
                   env: Mapping[str, str]) -> tuple[bool, list[str]]:
    """Install `spec` into `target` unless it is already there for that spec; one installer at a time
    (fcntl lock beside it), into a fresh directory renamed into place, so no run sees half an install."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = target / INSTALLED_MARKER
        if marker.is_file() and marker.read_text(encoding="utf-8").strip() == spec:
            log(f"pytest for Python {version}: reusing {target}")
            return True, []
        fresh = target.parent / f".{target.name}.{os.getpid()}.tmp"
        remove_tree(fresh)
        started = time.monotonic()
        log(f"pytest for Python {version}: {python} has none; installing {spec} into {target}")
        ok, output = pip_install(python, version, spec, fresh, env)
        if not ok:
            remove_tree(fresh)
            return False, output
        (fresh / INSTALLED_MARKER).write_text(spec + "\n", encoding="utf-8")
        remove_tree(target)
        os.replace(fresh, target)
        log(f"pytest for Python {version}: installed in {time.monotonic() - started:.1f} s")
        return True, output


def pip_install(python: str, version: str, spec: str, target: Path, env: Mapping[str, str]) -> tuple[bool, list[str]]:
    """`<python> -m pip install --target`; a Python without pip (a venv made `--without-pip`) gets the
    entrypoint's own pip, told the version, and wheels only (pytest and its dependencies are pure Python)."""
    options = ["install", "--target", str(target), "--no-input", "--disable-pip-version-check", "--quiet"]
    attempts = [[python, "-m", "pip", *options, spec]]
    if os.path.abspath(sys.executable) != os.path.abspath(python):  # a venv's python links to its base
        attempts.append([sys.executable, "-m", "pip", *options, "--python-version", version,
                         "--only-binary=:all:", spec])
    output: list[str] = []
    for attempt in attempts:
        try:
            done = subprocess.run(attempt, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  errors="replace", timeout=PYTEST_INSTALL_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            return False, [f"pip install timed out after {PYTEST_INSTALL_TIMEOUT:g} s"]
        except OSError as exc:
            output = [f"{type(exc).__name__}: {exc}"]
            continue
        output = (done.stdout + done.stderr).splitlines()
        if done.returncode == 0:
            return True, output
        if not any("No module named pip" in line for line in output):
            return False, output  # pip ran and failed (offline, no such version): another pip would too
    return False, output


def remove_tree(path: Path) -> None:
    """Remove a directory tree (or file) if it is there; never follows a symlink."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        import shutil  # only an install needs it
        shutil.rmtree(path)


def run_tests(argv: list[str], workspace: Path, env: Mapping[str, str], timeout: float | None) -> AgentRun:
    """Run the test command in its own process group, streaming its output like an agent's. After a
    timeout the whole group is stopped, and after a normal end whatever it left running (a server
    holding the output open would otherwise keep the entrypoint waiting)."""
    log(f"running tests: {argv[0]} ({len(argv) - 1} argument(s))")
    forwarder = _Forwarder(group=True)
    previous = {sig: signal.signal(sig, forwarder) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            process = subprocess.Popen(
                argv, cwd=workspace, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1, start_new_session=True,
            )
        except OSError as exc:
            return AgentRun(exit_code=None, tail=[], start_error=f"{type(exc).__name__}: {exc}")
        forwarder.process = process
        tail: list[str] = []
        reader = threading.Thread(target=lambda: tail.extend(pump(process, TEST_TAIL_LINES)[0]),
                                  name="test-output", daemon=True)
        reader.start()
        timed_out = not finished_in_time(process, timeout)
        if timed_out:
            log(f"tests timed out after {timeout:g} s; stopping them")
        stop_group(process, reader)
        reader.join()
        exit_code = process.wait()
    finally:
        forwarder.cancel()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return AgentRun(exit_code=exit_code, tail=tail, signalled=forwarder.received, timed_out=timed_out)


def finished_in_time(process: subprocess.Popen[str], timeout: float | None) -> bool:
    """Wait for the command; False when it is still running after `timeout` seconds."""
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def stop_group(process: subprocess.Popen[str], reader: threading.Thread) -> None:
    """SIGTERM what is left of the command's process group; SIGKILL it when it still runs, or still
    holds the output open, KILL_GRACE seconds later."""
    if not signal_group(process, signal.SIGTERM):
        return  # nothing left: the usual end
    deadline = time.monotonic() + KILL_GRACE
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(KILL_GRACE)
    reader.join(max(0.0, deadline - time.monotonic()))
    if process.poll() is None or reader.is_alive():
        signal_group(process, signal.SIGKILL)


def judge_tests(run: AgentRun, plan: PlannedTests) -> tuple[str, str]:
    """`passed`, `failed` or `not_run`, with the summary. Only a test tool that is not there is
    `not_run` (the agent's code cannot be blamed); a timeout or a stop signal is a failure."""
    if run.start_error is not None:
        return "not_run", f"Tests could not run: {run.start_error}"
    if run.signalled:
        return "failed", f"Tests stopped by {run.signalled}: {plan.label}"
    if run.timed_out:
        return "failed", f"Tests timed out after {plan.timeout:g} s: {plan.label}"
    if run.exit_code == 0:
        return "passed", f"Tests passed: {plan.label}"
    reason = not_run_reason(run)
    if reason is not None:
        return "not_run", f"Tests could not run: {reason}"
    return "failed", f"Tests failed (exit {run.exit_code}): {plan.label}"


def not_run_reason(run: AgentRun) -> str | None:
    """The line saying the test tool is missing (pytest, the make target), or the last output line
    when the shell could not find or execute the command (126/127); None for a real failure."""
    lines = [line.strip() for line in run.tail if line.strip()]
    for line in reversed(lines):
        if NOT_RUN_OUTPUT.search(line):
            return line
    if run.exit_code in NOT_RUN_EXIT_CODES:
        return lines[-1] if lines else f"exit code {run.exit_code}"
    return None


def bounded_tail(lines: list[str]) -> str:
    """The last TEST_TAIL_LINES lines, and at most TEST_TAIL_CHARS characters of them (the end kept)."""
    return "\n".join(lines[-TEST_TAIL_LINES:])[-TEST_TAIL_CHARS:]


# ------------------------------------------------------------------------- main
def write_result(workspace: Path, result: Mapping[str, Any]) -> None:
    """Write `.jervis/result.json` atomically (a reader never sees half a file), never through a
    symlink: an agent may have put one where `.jervis/` or a file in it stood."""
    jervis = own_dir(workspace, JERVIS_DIR)
    temporary = jervis / f".{RESULT_FILE}.{os.getpid()}.tmp"
    temporary.unlink(missing_ok=True)  # a leftover, or a link planted under this name: the name goes
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(result, indent=2, ensure_ascii=False))
    os.replace(temporary, jervis / RESULT_FILE)  # replaces a symlink named result.json, not its target


def own_dir(workspace: Path, name: str) -> Path:
    """`workspace/name` as a real directory: a symlink standing there is removed (the link, never
    its target) and a directory made in its place."""
    folder = workspace / name
    if folder.is_symlink():
        folder.unlink()
    folder.mkdir(exist_ok=True)
    return folder


def drop_stale_result(workspace: Path) -> None:
    """Remove a result left by an earlier run, unless `.jervis/` is a symlink (never delete through one)."""
    jervis = workspace / JERVIS_DIR
    if not jervis.is_symlink():
        (jervis / RESULT_FILE).unlink(missing_ok=True)


def log(message: str) -> None:
    """Entrypoint messages go to the same stream as the agent's (the Job's log)."""
    print(f"[jervis-entrypoint] {message}", flush=True)


def bad_environment(env: Mapping[str, str], reason: str) -> int:
    """Exit 2 with the reason on stderr, and a failure result if there is a workspace to put it in."""
    print(f"jervis-entrypoint: {reason}", file=sys.stderr, flush=True)
    workspace = workspace_from(env)
    if workspace is not None:
        with contextlib.suppress(OSError):
            write_result(workspace, {"success": False, "summary": f"Entrypoint cannot run: {reason}",
                                     "changedFiles": [], "exitCode": None, "costUsd": None, "logTail": "",
                                     "agent": result_agent(env)})
    return EXIT_BAD_ENVIRONMENT


def result_agent(env: Mapping[str, str]) -> str:
    """The `agent` of a failure result: "test" in test mode, else the step's agent type."""
    if (env.get("JERVIS_MODE") or "").strip().lower() == "test":
        return "test"
    return (env.get("AGENT_TYPE") or "").strip()


def main(env: Mapping[str, str] | None = None) -> int:
    """Validate, run the step, write the result; 0 success, 1 failed step, 2 bad environment."""
    env = os.environ if env is None else env
    try:
        config = load_config(env)
        os.chdir(config.workspace)  # the agent, git and the tests all work in the workspace
        if config.mode == "git":
            result = run_git_mode(config, load_git_plan(config.workspace))
        elif config.mode == "test":
            result = run_test_mode(config, load_test_plan(config.workspace))
        else:
            result = run_agent_mode(config, load_step(config.workspace))
    except BadEnvironment as exc:
        return bad_environment(env, str(exc))
    except (GitError, OSError, subprocess.TimeoutExpired) as exc:  # the workspace itself is unusable
        return bad_environment(env, f"{type(exc).__name__}: {exc}")
    write_result(config.workspace, result)
    log(f"{'success' if result['success'] else 'failure'}: {result['summary'][:200]}")
    return EXIT_SUCCESS if result["success"] else EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
