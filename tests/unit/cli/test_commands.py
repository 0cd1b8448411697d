"""The commands against a scripted service on loopback: what they send, print and exit with."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from app.cli.__main__ import ask_terminal, cli
from app.cli.codes import ExitCode
from app.cli.session import AnsweredElsewhereError
from app.cli.wire import AUTO_CLARIFICATION, KOTLIN_FIELDS
from app.schemas.kotlin import OrchestrateRequest
from tests.support import make_git_repo
from tests.unit.cli.fake_service import Connection, FakeService

THREAD = "thread-abc-12345678"


def invoke(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)


def run_args(fake: FakeService, repo: Path, data_root: Path, *extra: str) -> list[str]:
    return ["run", "--repo", str(repo), "--url", fake.url, "--data-root", str(data_root), "--receive", "off",
            "--poll-seconds", "0.05", *extra, "Add", "a /health endpoint"]


def test_run_sends_kotlins_request_follows_the_stream_and_a_refused_gate_exits_5(
        fake_service: FakeService, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "shop")
    fake_service.connections = [
        Connection([(1, "node_start", {"node": "execute_step", "percent": 40.0, "goal_index": 0, "total_goals": 1,
                                       "step_index": 1, "total_steps": 3, "attempt": 2}),
                    (2, "agent_log", {"agent": "aider", "line": "wrote app/health.py"}),
                    (3, "approval_required", {"interrupt": {
                        "action": "commit", "description": "Commit 1 file to task/x?", "branch": "task/x",
                        "changed_files": ["app/health.py"]}})]),
        Connection([(4, "node_start", {"node": "finalize", "percent": 95.0}),
                    (5, "done", {"summary": "Commit zamítnut.", "branch": None, "artifacts": ["app/health.py"],
                                 "percent": 100.0})]),
    ]

    result = invoke(*run_args(fake_service, repo, tmp_path / "data", "--max-changed-files", "7"), stdin="\nne\n")

    assert result.exit_code == ExitCode.USER_STOPPED, result.output
    sent = fake_service.starts[0]
    assert tuple(sent) == KOTLIN_FIELDS and OrchestrateRequest.model_validate(sent)
    assert (sent["query"], sent["project_id"], sent["client_id"]) == ("Add a /health endpoint", "shop", "cli")
    assert sent["workspace_path"].startswith("cli/shop-") and sent["rules"]["max_changed_files"] == 7
    assert len(sent["task_id"]) == 32 and "-" not in sent["task_id"]
    assert fake_service.approvals == [{"approved": False, "modification": None, "reason": "ne"}]
    assert fake_service.last_event_ids == ["0", "3"]  # the cursor continues into the next segment
    assert "? Approval needed: commit" in result.stdout and "branch: task/x" in result.stdout
    assert "changed files (1): app/health.py" in result.stdout
    assert "aider│ wrote app/health.py" in result.stdout
    assert "please answer yes or no" in result.stdout  # the empty line was not taken as "no"
    assert "✔ done" in result.stdout and "no branch was created" in result.stdout
    assert "you refused the commit gate" in result.stdout
    assert "execute_step · goal 1/1 · step 2/3 · attempt 2" in result.stderr and "100%" in result.stderr


def test_run_with_a_taken_push_port_and_no_stream_polls_status(fake_service: FakeService, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "shop")
    fake_service.statuses = [{"status": "running", "percent": "50"},
                             {"status": "done", "summary": "Hotovo.", "branch": "", "artifacts": "", "percent": "100"}]
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        args = run_args(fake_service, repo, tmp_path / "data")
        args[args.index("off")] = f"127.0.0.1:{holder.getsockname()[1]}"
        result = invoke(*args)

    assert result.exit_code == ExitCode.DONE, result.output
    assert "status pushes: port taken, polling /status instead" in result.stderr
    assert "polling /status every 0.05 s" in result.stderr
    assert "✔ done" in result.stdout and "Hotovo." in result.stdout
    assert fake_service.status_calls >= 2


def test_run_with_yes_answers_a_question_and_an_error_exits_1(fake_service: FakeService, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "shop")
    fake_service.connections = [
        Connection([(1, "approval_required",
                     {"interrupt": {"action": "clarify", "description": "1. Který projekt?"}})]),
        Connection([(2, "error", {"error": "Krok 1 selhal", "report": "Zbývá: vše"})]),
    ]

    result = invoke(*run_args(fake_service, repo, tmp_path / "data", "--yes"))

    assert result.exit_code == ExitCode.FAILED, result.output
    assert fake_service.approvals == [{"approved": True, "modification": None, "reason": AUTO_CLARIFICATION}]
    assert "? The run asks:" in result.stdout and "Který projekt?" in result.stdout
    assert "✘ error" in result.stdout and "Krok 1 selhal" in result.stdout and "Zbývá: vše" in result.stdout


def test_run_with_closed_stdin_leaves_the_run_waiting(fake_service: FakeService, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "shop")
    fake_service.connections = [Connection([(1, "approval_required", {"interrupt": {"action": "push"}})])]

    result = invoke(*run_args(fake_service, repo, tmp_path / "data"), stdin="")

    assert result.exit_code == ExitCode.WAITING
    assert f"jervis approve {THREAD}" in result.stderr and fake_service.approvals == []


def test_busy_service_is_retried_while_wait_busy_lasts_then_exits_4(fake_service: FakeService,
                                                                    tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "shop")
    fake_service.start_replies = [429, 429, 429]

    result = invoke(*run_args(fake_service, repo, tmp_path / "data", "--wait-busy", "0.05"))

    assert result.exit_code == ExitCode.BUSY
    assert "busy, retrying in 0.0" in result.stderr and "--wait-busy" in result.stderr.splitlines()[-1]
    assert len(fake_service.starts) == 2


def test_refused_request_prints_the_services_detail_and_exits_2(fake_service: FakeService, tmp_path: Path) -> None:
    fake_service.start_replies = [422]
    result = invoke(*run_args(fake_service, make_git_repo(tmp_path / "shop"), tmp_path / "data"))
    assert result.exit_code == ExitCode.REJECTED_REQUEST and "escapes DATA_ROOT" in result.stderr


def test_run_refuses_a_missing_repository(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "--repo", str(tmp_path / "nope"), "x"])
    assert result.exit_code == 2 and "does not exist" in result.stderr


@pytest.mark.parametrize(("reply", "code"), [({"status": "done", "summary": "ok", "artifacts": "a.py,b.py"}, 0),
                                             ({"status": "error", "error": "boom", "report": "line 1\nline 2"}, 1),
                                             ({"status": "unknown"}, 1)])
def test_status_prints_key_values_and_exits_by_status(fake_service: FakeService, reply: dict[str, str],
                                                      code: int) -> None:
    fake_service.statuses = [reply]

    result = invoke("status", THREAD, "--url", fake_service.url)
    raw = invoke("status", THREAD, "--url", fake_service.url, "--json")

    assert result.exit_code == code == raw.exit_code
    assert f"status: {reply['status']}" in result.stdout and f"thread_id: {THREAD}" in result.stdout
    if "artifacts" in reply:
        assert "artifacts: a.py, b.py" in result.stdout
    if "report" in reply:
        assert "report: line 1\n    line 2" in result.stdout
    assert '"status": "' + reply["status"] + '"' in raw.stdout


def test_approve_sends_kotlins_body(fake_service: FakeService) -> None:
    fake_service.statuses = [{"status": "interrupted", "interrupt_action": "commit"}]
    assert invoke("approve", THREAD, "--url", fake_service.url, "ano,", "ale", "ne", "do", "mastera").exit_code == 0
    assert invoke("approve", THREAD, "--url", fake_service.url).exit_code == 0
    assert invoke("approve", THREAD, "--url", fake_service.url, "--no", "yes but later").exit_code == 0
    fake_service.statuses = [{"status": "interrupted", "interrupt_action": "clarify"}]
    assert invoke("approve", THREAD, "--url", fake_service.url, "projekt", "Webshop").exit_code == 0

    assert fake_service.approvals == [
        {"approved": True, "modification": None, "reason": "ano, ale ne do mastera"},
        {"approved": True, "modification": None, "reason": "yes"},
        {"approved": False, "modification": None, "reason": "yes but later"},
        {"approved": True, "modification": None, "reason": "projekt Webshop"},
    ]


def test_cancel_and_its_refusal(fake_service: FakeService) -> None:
    assert invoke("cancel", THREAD, "--url", fake_service.url).exit_code == 0
    fake_service.cancel_status = 404
    refused = invoke("cancel", THREAD, "--url", fake_service.url)
    assert refused.exit_code == ExitCode.REJECTED_REQUEST and f"No active task for {THREAD}" in refused.stderr


def test_list_prints_runs_newest_first(fake_service: FakeService) -> None:
    fake_service.runs = [
        {"thread_id": THREAD, "task_id": "abc", "client_id": "cli", "status": "done", "percent": 100.0,
         "branch": "task/abc", "summary": "Hotovo: endpoint.", "error": None,
         "created_at": "2026-11-23T10:00:00+00:00", "updated_at": "2026-11-23T10:05:00+00:00"},
        {"thread_id": "thread-def-1", "task_id": "def", "client_id": "cli", "status": "error", "percent": 40.0,
         "branch": None, "summary": None, "error": "boom", "created_at": "2026-11-23T09:00:00+00:00",
         "updated_at": "2026-11-23T09:01:00+00:00"},
    ]

    table = invoke("list", "--url", fake_service.url, "--limit", "5")
    raw = invoke("list", "--url", fake_service.url, "--json")

    lines = table.stdout.splitlines()
    assert table.exit_code == 0 and len(lines) == 2
    assert THREAD in lines[0] and "task/abc" in lines[0] and "100%" in lines[0] and "Hotovo" in lines[0]
    assert "thread-def-1" in lines[1] and "boom" in lines[1]
    assert '"thread_id": "thread-def-1"' in raw.stdout
    assert invoke("list", "--url", fake_service.url, "--limit", "0").exit_code == 2


def test_the_prompt_gives_way_when_the_question_is_answered_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real pipe as stdin: nothing typed, the probe says answered → the prompt stops; a typed
    line is read as before, and a closed pipe is None."""
    read_end, write_end = os.pipe()
    with os.fdopen(read_end) as stdin, os.fdopen(write_end, "w") as typed:
        monkeypatch.setattr(sys, "stdin", stdin)
        probes: list[int] = []
        with pytest.raises(AnsweredElsewhereError):
            ask_terminal("Approve?", lambda: probes.append(1) is None and len(probes) >= 3, poll_seconds=0.01)
        assert len(probes) == 3
        typed.write("ano\n")
        typed.flush()
        assert ask_terminal("Approve?", lambda: True, poll_seconds=0.01) == "ano"
        typed.close()
        assert ask_terminal("Approve?", lambda: False, poll_seconds=0.01) is None
