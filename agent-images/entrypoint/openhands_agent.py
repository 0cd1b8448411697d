#!/usr/bin/env python3
"""One Jervis step with the OpenHands agent (the `openhands-sdk` and `openhands-tools` packages).

The entrypoint starts this file beside it (`openhands_argv`) with the Python of the OpenHands
virtualenv (>= 3.12; `OPENHANDS_PYTHON`), not its own, in the workspace:

    <openhands python> openhands_agent.py .jervis/instructions.md

It runs OpenHands' own agent with two tools, the terminal and the file editor, on the workspace,
until the agent finishes, errs, gets stuck or uses up `AGENT_MAX_ITERATIONS` steps. The model
comes from OpenHands' `LLM_*` variables (`LLM_MODEL`, `LLM_BASE_URL`, `LLM_API_KEY`,
`LLM_NATIVE_TOOL_CALLING=false` for tool calls written as text, ...).

What the entrypoint reads of it (its stdout, line by line):
- one `[openhands] ...` line per event (an action, its observation, a message, an error);
- `Tokens: N sent, M received.` after each model call (the entrypoint adds them up);
- last, one JSON line `{"type": "result", "status": ..., "is_error": ..., "summary": ...}`;
- exit 0 only when the agent finished; 1 when it erred, got stuck or ran out of iterations;
  2 when it cannot start (no instructions, no SDK); 128+signal when it was stopped.

Nothing but the model is reached over the network: no public skills are loaded (no clone of
OpenHands' extensions), no tracing is exported, litellm reads its local price list, and with
`LLM_BASE_URL` set an audit hook refuses any other connection from this process (and says so).
A stop signal kills everything the agent started (its shell runs in a session of its own, outside
the entrypoint's process group) before this process exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import warnings
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

DEFAULT_MAX_ITERATIONS = 30
DEFAULT_MAX_OUTPUT_TOKENS = 4096
#: Characters of one event shown in the log (the agent's own files can be long).
EVENT_CHARS = 600
PREFIX = "[openhands]"
EXIT_FINISHED, EXIT_FAILED, EXIT_CANNOT_START = 0, 1, 2
PR_SET_CHILD_SUBREAPER = 36
#: Told to the agent after OpenHands' own system prompt (whose examples use /workspace paths: a
#: small model copies them, measured, so the real directory is named).
SYSTEM_SUFFIX = """You are one step of a larger job run by Jervis. The project is in {workspace}:
every file you read or change is under that directory (not /workspace, unless that is the one).
Do not commit, push or create branches: the changes are reviewed and committed later. Do not
create notes for yourself (AGENTS.md, memory or summary files): change only what the task asks
for. When the task is done, finish with a one-sentence summary of what you changed."""


def say(text: str) -> None:
    """One log line of ours (never starting with `Tokens:` or `{`, which the entrypoint parses)."""
    for line in (text.replace("\r", "").splitlines() or [""]):
        print(f"{PREFIX} {line}", flush=True)


def report(status: str, summary: str, *, iterations: int = 0, error: bool = True) -> None:
    """The last line: what the entrypoint judges the step by (with the exit code)."""
    print(json.dumps({"type": "result", "agent": "openhands", "status": status, "is_error": error,
                      "summary": summary[:4000], "iterations": iterations}, ensure_ascii=False), flush=True)


# ------------------------------------------------------------------ the environment
def prepare_environment(env: MutableMapping[str, str]) -> None:
    """OpenHands' defaults that suit one unattended step (the pod's own values win)."""
    for name in [name for name in env if name.startswith(("LMNR_", "OTEL_"))]:
        del env[name]  # no traces exported anywhere
    env.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
    env.setdefault("LOG_LEVEL", "WARNING")  # its start-up INFO lines say nothing about the step
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-list download at import
    env.setdefault("ALLOW_SHORT_CONTEXT_WINDOWS", "true")  # the chosen model is the operator's call
    env.setdefault("LLM_STREAM", "true")  # a stopped step closes its connection: the server stops too
    env.setdefault("LLM_MAX_OUTPUT_TOKENS", env.get("AGENT_MAX_OUTPUT_TOKENS") or str(DEFAULT_MAX_OUTPUT_TOKENS))
    context = env.get("AGENT_CONTEXT_TOKENS", "").strip()
    if context.isdigit():
        env.setdefault("LLM_MAX_INPUT_TOKENS", context)
    if env.get("LLM_BASE_URL") and not env.get("LLM_API_KEY"):
        env["LLM_API_KEY"] = "local"  # a local server wants none, but the OpenAI client insists on one
    host = urlsplit(env.get("LLM_BASE_URL", "")).hostname
    if host:  # the model is reached directly, never through a proxy from the environment
        for name in ("NO_PROXY", "no_proxy"):
            env[name] = ",".join(part for part in (env.get(name, ""), host) if part)


def quiet_shell(env: MutableMapping[str, str]) -> Path | None:
    """An inputrc without bracketed paste for the agent's interactive bash: with it, every command's
    output the model reads starts and ends with terminal escape codes. None when INPUTRC is set."""
    if env.get("INPUTRC"):
        return None
    handle, name = tempfile.mkstemp(prefix="jervis-openhands-", suffix=".inputrc")
    with os.fdopen(handle, "w") as inputrc:
        inputrc.write("set enable-bracketed-paste off\n")
    env["INPUTRC"] = name
    return Path(name)


def extra_body(env: MutableMapping[str, str]) -> dict[str, int]:
    """`max_tokens` in the request body for an OpenAI-compatible local server: OpenHands sends its
    output cap as `max_completion_tokens`, which llama-cpp-python's server ignores (a small model
    that loops would write until the context is full). Set in code: OpenHands cannot read a JSON
    object from `LLM_LITELLM_EXTRA_BODY`."""
    cap = env.get("LLM_MAX_OUTPUT_TOKENS", "")
    if env.get("LLM_MODEL", "").startswith("openai/") and env.get("LLM_BASE_URL") and cap.isdigit():
        return {"max_tokens": int(cap)}
    return {}


def max_iterations(env: MutableMapping[str, str]) -> int:
    raw = env.get("AGENT_MAX_ITERATIONS", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_ITERATIONS


class NetworkGuard:
    """An audit hook that lets this process reach the model's host and port only (and local sockets)."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.addresses = {self.host}
        with contextlib.suppress(OSError):  # unresolvable: the model's own connection will say so
            self.addresses |= {str(info[4][0]) for info in socket.getaddrinfo(self.host, self.port)}
        self.refused: list[str] = []

    def allows(self, host: Any, port: Any) -> bool:
        """The model's host (or one of its addresses); a port, when one is named, must be the model's."""
        if isinstance(host, bytes):
            host = host.decode(errors="replace")
        if isinstance(port, bytes):
            port = port.decode(errors="replace")
        number = int(port) if isinstance(port, int) or (isinstance(port, str) and port.isdigit()) else None
        return str(host) in self.addresses and (number is None or number == self.port)

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "socket.getaddrinfo":
            host, port = args[0], args[1]
            if host is not None and not self.allows(host, port):
                self.refuse(f"{host}:{port}")
                raise socket.gaierror(socket.EAI_NONAME, f"{host} is not the model (Jervis allows only the model)")
        elif event == "socket.connect":
            sock, address = args[0], args[1]
            if sock.family in (socket.AF_INET, socket.AF_INET6) and not self.allows(address[0], address[1]):
                where = f"{address[0]}:{address[1]}"
                self.refuse(where)
                raise ConnectionRefusedError(f"{where} is not the model (Jervis allows only the model)")

    def refuse(self, where: str) -> None:
        self.refused.append(where)
        say(f"refused a connection to {where}: only the model ({self.host}:{self.port}) may be reached")


# ---------------------------------------------------------------------- processes
def descendants(root: int) -> list[int]:
    """Every process below `root` (by parent pid), deepest first."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found[::-1]


def kill_descendants() -> int:
    """SIGKILL whatever the agent started (shells in sessions of their own, servers it left running)."""
    killed = 0
    for pid in descendants(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except OSError:
            pass
    return killed


def become_subreaper() -> None:
    """Orphans of the agent's commands (a daemon that double-forked) are re-parented here, so the
    sweep at the end finds them."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux: the sweep finds direct descendants only
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


class Run:
    """The state the event printer, the signal handler and the end share."""

    def __init__(self) -> None:
        self.iterations = 0
        self.summary = ""
        self.errors: list[str] = []
        self.tokens = (0, 0)
        self.conversation: Any = None
        self.streamed = False
        """Streamed calls: tokens are counted from each call's usage chunk (also a call whose answer
        OpenHands could not parse, which its own statistics leave out); else from its statistics."""
        self.lock = threading.RLock()  # the stop handler may interrupt a holder on the same thread

    def on_event(self, event: Any) -> None:
        name = type(event).__name__
        text = describe(event)
        if name == "ActionEvent":
            self.iterations += 1
            action = getattr(event, "action", None)
            if getattr(event, "tool_name", "") == "finish" and action is not None:
                self.summary = str(getattr(action, "message", "") or self.summary)
        elif name == "MessageEvent" and getattr(event, "source", "") == "agent":
            self.summary = text or self.summary
        elif name in ("ConversationErrorEvent", "AgentErrorEvent"):
            self.errors.append(text)
        if text and name not in ("SystemPromptEvent", "ConversationStateUpdateEvent"):
            say(f"{name}: {text[:EVENT_CHARS]}")
        self.print_tokens()

    def on_chunk(self, chunk: Any) -> None:
        """A streamed answer's piece; the last one of each call carries its usage."""
        usage = getattr(chunk, "usage", None)
        if usage is None:
            return
        sent, received = int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)
        if sent > 0 or received > 0:
            with self.lock:
                print(f"Tokens: {sent} sent, {received} received.", flush=True)

    def print_tokens(self) -> None:
        """`Tokens: N sent, M received.` for what the model calls used since the last line (unstreamed)."""
        if self.conversation is None or self.streamed:
            return
        with self.lock:
            try:
                usage = self.conversation.conversation_stats.get_combined_metrics().accumulated_token_usage
            except Exception:  # statistics must never end the step
                return
            if usage is None:
                return
            now = (int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))
            sent, received = now[0] - self.tokens[0], now[1] - self.tokens[1]
            if sent > 0 or received > 0:
                self.tokens = now
                print(f"Tokens: {sent} sent, {received} received.", flush=True)


def describe(event: Any) -> str:
    """An event as one short text: the tool and its arguments, an observation, a message, an error."""
    name = type(event).__name__
    if name == "ActionEvent":
        action = getattr(event, "action", None)
        arguments = action.model_dump(exclude={"kind"}) if action is not None else {}
        return f"{getattr(event, 'tool_name', '?')} {json.dumps(arguments, ensure_ascii=False, default=str)}"
    if name == "ObservationEvent":
        observation = getattr(event, "observation", None)
        return f"{getattr(event, 'tool_name', '?')} -> {getattr(observation, 'text', '') or ''}"
    if name == "MessageEvent":
        message = getattr(event, "llm_message", None)
        return "".join(getattr(part, "text", "") for part in getattr(message, "content", []) or [])
    if name == "AgentErrorEvent":
        return str(getattr(event, "error", ""))
    if name == "ConversationErrorEvent":
        return f"{getattr(event, 'code', '')}: {getattr(event, 'detail', '')}"
    return ""


# --------------------------------------------------------------------------- main
def main(argv: list[str]) -> int:
    if len(argv) != 2:
        say("usage: openhands_agent.py INSTRUCTIONS_FILE")
        report("cannot_start", "openhands_agent.py needs the instructions file as its one argument")
        return EXIT_CANNOT_START
    try:
        instructions = Path(argv[1]).read_text(encoding="utf-8")
    except OSError as exc:
        report("cannot_start", f"cannot read the instructions: {exc}")
        return EXIT_CANNOT_START
    prepare_environment(os.environ)
    warnings.filterwarnings("ignore", message="Cost calculation failed")  # a local model has no price
    guard = NetworkGuard(os.environ["LLM_BASE_URL"]) if os.environ.get("LLM_BASE_URL") else None
    if guard is not None:
        sys.addaudithook(guard)
    try:
        from openhands.sdk import LLM, Agent, AgentContext, Conversation, Tool
        from openhands.sdk.conversation.state import ConversationExecutionStatus
        from openhands.tools.file_editor import FileEditorTool
        from openhands.tools.terminal import TerminalTool
    except ImportError as exc:
        report("cannot_start", f"the OpenHands SDK is not installed for {sys.executable}: {exc}")
        return EXIT_CANNOT_START
    become_subreaper()
    inputrc = quiet_shell(os.environ)
    run = Run()

    def stop(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        killed = kill_descendants()
        say(f"stopped by {name}; {killed} process(es) the agent started were killed")
        if inputrc is not None:
            inputrc.unlink(missing_ok=True)
        run.print_tokens()
        report("stopped", f"OpenHands stopped by {name}", iterations=run.iterations)
        os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)

    llm = LLM.load_from_env()
    if extra := extra_body(os.environ):
        llm = llm.model_copy(update={"litellm_extra_body": {**llm.litellm_extra_body, **extra}})
    say(f"model {llm.model} at {llm.base_url or 'its provider'}; tool calls "
        f"{'native' if llm.native_tool_calling else 'as text'}; at most {max_iterations(os.environ)} steps")
    agent = Agent(llm=llm, tools=[Tool(name=TerminalTool.name, params={"terminal_type": "subprocess"}),
                                  Tool(name=FileEditorTool.name)],
                  agent_context=AgentContext(system_message_suffix=SYSTEM_SUFFIX.format(workspace=os.getcwd())))
    run.streamed = llm.stream  # OpenHands streams only when a token callback takes the pieces
    conversation = Conversation(agent=agent, workspace=os.getcwd(), callbacks=[run.on_event], visualizer=None,
                                token_callbacks=[run.on_chunk] if llm.stream else None,
                                max_iteration_per_run=max_iterations(os.environ))
    run.conversation = conversation
    try:
        conversation.send_message(instructions)
        conversation.run()
        status = conversation.state.execution_status
    except Exception as exc:  # any failure of the agent is the step's failure
        run.errors.append(f"{type(exc).__name__}: {exc}")
        status = None
    finally:
        run.print_tokens()
        with contextlib.suppress(Exception):
            conversation.close()
        kill_descendants()
        if inputrc is not None:
            inputrc.unlink(missing_ok=True)
    if status == ConversationExecutionStatus.FINISHED:
        report("finished", run.summary.strip() or "OpenHands finished", iterations=run.iterations, error=False)
        return EXIT_FINISHED
    state = status.value if status is not None else "error"
    reason = run.errors[-1] if run.errors else f"the conversation ended as {state}"
    report(state, f"OpenHands {state}: {reason}", iterations=run.iterations)
    return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv))
