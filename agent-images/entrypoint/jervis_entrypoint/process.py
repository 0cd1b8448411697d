"""The agent as a child process: its output streamed to the Job's log line by line, the tail kept,
and what the output reports (Claude Code's JSON result, the tokens used) picked out on the way."""

from __future__ import annotations

import json
import re
import signal
import subprocess
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import log
from .signals import Forwarder

TAIL_LINES = 60


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


def run_agent(argv: list[str], workspace: Path, env: Mapping[str, str]) -> AgentRun:
    """Run the agent, streaming its output line by line (the Job's logs) and keeping the tail."""
    log(f"running {argv[0]} ({len(argv) - 1} argument(s))")
    forwarder = Forwarder()
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
