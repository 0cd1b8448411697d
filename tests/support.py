"""Builders shared by tests: Kotlin-shaped requests, scripted LLM answers, git workspaces."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tests.fixtures.llm_server import Reply

T = TypeVar("T")

#: The tests' deterministic agent (tests/fixtures/scripted_agent.py) as LOCAL_AGENT_COMMAND /
#: AGENT_COMMAND: the product's default agent is the real Aider, which the tests select only where
#: they mean to run it (tests/agent_images).
SCRIPTED_AGENT = [sys.executable, str(Path(__file__).resolve().parent / "fixtures" / "scripted_agent.py")]


class FakeClock:
    """Epoch seconds that only move when a test says so (staleness without sleeping)."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def free_port() -> int:
    """A loopback port nobody listens on (for servers to start, or to be refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def new_task_id() -> str:
    """24 hex characters, like the MongoDB ObjectIds Kotlin sends."""
    return uuid.uuid4().hex[:24]


def kotlin_rules(**overrides: Any) -> dict[str, Any]:
    rules = {
        "branch_naming": "task/{taskId}", "commit_prefix": "task({taskId}):",
        "require_review": False, "require_tests": False,
        "require_approval_commit": True, "require_approval_push": True,
        "allowed_branches": ["task/*", "fix/*"], "forbidden_files": ["*.env", "secrets/*"],
        "max_changed_files": 20, "auto_push": False,
        "auto_use_anthropic": False, "auto_use_openai": False, "auto_use_gemini": False,
    }
    return rules | overrides


def orchestrate_body(*, task_id: str | None = None, query: str = "Přidej endpoint /health do API",
                     workspace_path: str = "clients/c1/default", rules: dict[str, Any] | None = None,
                     **overrides: Any) -> dict[str, Any]:
    """Exactly what the Kotlin client sends: every field, explicit nulls (`docs/api.md`)."""
    body = {
        "task_id": task_id or new_task_id(), "client_id": "67a9b1c2d3e4f5a6b7c8d9e0", "project_id": None,
        "client_name": "Acme", "project_name": None, "workspace_path": workspace_path, "query": query,
        "agent_preference": "auto", "rules": rules or kotlin_rules(), "environment": None,
        "jervis_project_id": None, "chat_history": None,
    }
    return body | overrides


def approval(approved: bool, reason: str | None) -> dict[str, Any]:
    """`ApprovalResponseDto` as Kotlin sends it (modification is always null)."""
    return {"approved": approved, "modification": None, "reason": reason}


def node_marker(name: str) -> str:
    """The first line of a node's system prompt; a trailing newline keeps `plan` ≠ `plan_steps`."""
    return f"### JERVIS NODE: {name}\n"


def classification(category: str = "advice", action: str = "respond", complexity: str = "simple",
                   goal_clear: bool = True, questions: list[str] | None = None) -> str:
    return json.dumps({
        "task_category": category, "task_action": action, "external_refs": [], "complexity": complexity,
        "goal_clear": goal_clear, "clarification_questions": questions or [], "reasoning": "scripted",
    })


def file_block(path: str, content: str) -> str:
    return f"<<<FILE {path}\n{content}\n>>>"


def code_task_script(*, files: dict[str, str] | None = None, extra_instructions: str = "",
                     summary: str = "Hotovo: přidán endpoint.") -> list[Reply]:
    """LLM answers for a single code task: one goal, one code step that writes `files`."""
    files = files if files is not None else {"app/health.py": "def health():\n    return {'status': 'ok'}"}
    instructions = "\n".join(file_block(p, c) for p, c in files.items())
    if extra_instructions:
        instructions = f"{extra_instructions}\n{instructions}"
    return [
        Reply(match=node_marker("intake"), content=classification("single_task", "code", "simple"), name="intake"),
        Reply(match=node_marker("plan"), content=json.dumps({"goals": [
            {"id": "g1", "title": "Endpoint /health", "description": "add it", "complexity": "simple",
             "dependencies": []}]}), name="plan"),
        Reply(match=node_marker("plan_steps"), content=json.dumps({"steps": [
            {"instructions": instructions, "step_type": "code", "files": list(files)}]}), name="plan_steps"),
        Reply(match=node_marker("finalize"), content=summary, name="finalize"),
    ]


def advice_script(answer: str = "Jervis umí odpovídat na otázky.") -> list[Reply]:
    return [
        Reply(match=node_marker("intake"), content=classification("advice", "respond"), name="intake"),
        Reply(match=node_marker("respond"), content=answer, name="respond"),
    ]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def make_git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "dev@example.com")
    git(path, "config", "user.name", "Dev")
    (path / "README.md").write_text("# project\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "initial")
    return path


def wait_until(probe: Callable[[], T | None], timeout: float = 20.0, what: str = "condition") -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def reflection(action: str, *, root_cause: str = "scripted root cause", hint: str = "",
               analysis: str = "scripted analysis", confidence: float = 0.8) -> str:
    """The reflection's JSON, with exactly spec 000's keys."""
    return json.dumps({"analysis": analysis, "root_cause": root_cause, "suggested_action": action,
                       "confidence": confidence, "modification_hint": hint})


def goals_json(*titles: str) -> str:
    return json.dumps({"goals": [{"id": f"g{i}", "title": title, "description": title, "complexity": "simple",
                                  "dependencies": []} for i, title in enumerate(titles, 1)]})


def steps_json(*steps: str | dict[str, Any]) -> str:
    """Code steps from instructions (or full step objects)."""
    return json.dumps({"steps": [s if isinstance(s, dict) else {"instructions": s, "step_type": "code", "files": []}
                                 for s in steps]})


def sse_events(client: Any, thread_id: str, headers: dict[str, str] | None = None,
               ) -> list[tuple[int, str, dict[str, Any]]]:
    """Every event of a finished run segment from `/stream/{thread_id}`: (id, type, data)."""
    with client.stream("GET", f"/stream/{thread_id}", headers=headers or {}) as response:
        assert response.status_code == 200
        text = "".join(response.iter_text())
    events = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != ":")
        if "id" in fields:
            events.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
    return events


def attempt_instructions(events: list[tuple[int, str, dict[str, Any]]]) -> dict[int, str]:
    """What the scripted agent was told, per attempt (it echoes its instructions line by line).
    Later runs of the same attempt number (another step) are appended to the same entry."""
    told: dict[int, list[str]] = {}
    attempt = 0
    for _, kind, data in events:
        if kind != "agent_log":
            continue
        line = data.get("line", "")
        if line.startswith("scripted agent: attempt "):
            attempt = int(line.split()[3].rstrip(","))
            told.setdefault(attempt, [])
        elif line.startswith("instructions| ") and attempt:
            told[attempt].append(line[len("instructions| "):])
    return {number: "\n".join(lines) for number, lines in told.items()}


async def until(probe: Callable[[], Any], what: str, timeout: float = 30, interval: float = 0.02) -> Any:
    """Poll a synchronous `probe` until it returns something truthy (returned), within `timeout`."""
    deadline = time.monotonic() + timeout
    while not (value := probe()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(interval)
    return value


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
