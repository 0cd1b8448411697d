"""The agent entrypoint as a real process on real git repositories (agent-images/CONTRACT.md).

Agent mode drives the deterministic scripted agent (tests/fixtures/scripted_agent.py) as an
`AGENT_TYPE=command` agent, and a tiny fake `claude` for Claude Code's JSON shapes. Git mode
commits and pushes to a local bare repository. Test mode runs real shell commands, make and Python.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.agent_images.conftest import ENTRYPOINT, REPO_ROOT, base_env
from tests.support import file_block, git, make_git_repo

SCRIPTED_AGENT = REPO_ROOT / "tests" / "fixtures" / "scripted_agent.py"
AGENT = [sys.executable, str(SCRIPTED_AGENT)]


def hand_over(workspace: Path, instructions: str, **task: Any) -> None:
    """What the orchestrator writes before a step: `.jervis/instructions.md` and `task.json`."""
    jervis = workspace / ".jervis"
    jervis.mkdir(parents=True, exist_ok=True)
    (jervis / "instructions.md").write_text(instructions, encoding="utf-8")
    (jervis / "task.json").write_text(json.dumps({"files": [], "mcp_config": None, "agent_files": [], **task}))


Run = tuple[subprocess.CompletedProcess[str], dict[str, Any]]


def run_entrypoint(workspace: Path, *, agent_type: str = "command", command: list[str] | None = AGENT,
                   path_prefix: Path | None = None, **env: str) -> Run:
    """Run the entrypoint as the local runner does; return the process and `.jervis/result.json`."""
    environment = base_env(WORKSPACE_PATH=str(workspace), AGENT_TYPE=agent_type, TASK_ID="t1", **env)
    if command is not None:
        environment["AGENT_COMMAND"] = json.dumps(command)
    if path_prefix is not None:
        environment["PATH"] = f"{path_prefix}{os.pathsep}{environment['PATH']}"
    done = subprocess.run([sys.executable, str(ENTRYPOINT)], env=environment, cwd=workspace, capture_output=True,
                          text=True, timeout=120)
    result_path = workspace / ".jervis" / "result.json"
    result = json.loads(result_path.read_text()) if result_path.exists() else {}
    return done, result


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_git_repo(tmp_path / "repo")


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


# ------------------------------------------------------------------ agent mode
def test_changed_files_come_from_git_not_from_the_agent(repo: Path) -> None:
    """Untracked new, modified, deleted and unclaimed files count; .jervis/, agent files and files
    that were already dirty before the step (and untouched) do not. The entrypoint commits nothing."""
    (repo / "old.txt").write_text("old\n")
    git(repo, "add", "old.txt")
    git(repo, "commit", "-qm", "old")
    (repo / "dirty-before.txt").write_text("left alone\n")
    (repo / "CLAUDE.md").write_text("# for the agent\n")
    before = head(repo)
    hand_over(repo, "\n".join([file_block("src/new.py", "x = 1"), file_block("README.md", "# changed"),
                               file_block("CLAUDE.md", "# the agent touched it")]),
              agent_files=["CLAUDE.md", ".claude/mcp.json"])
    sneaky = ["sh", "-c", f"rm old.txt && echo x > unclaimed.txt && exec {shlex.join(AGENT)}"]

    done, result = run_entrypoint(repo, command=sneaky)

    assert done.returncode == 0, done.stdout + done.stderr
    assert result["changedFiles"] == ["README.md", "old.txt", "src/new.py", "unclaimed.txt"]
    assert result["success"] is True and result["exitCode"] == 0 and result["agent"] == "command"
    assert result["summary"] == "Wrote 3 file(s): src/new.py, README.md, CLAUDE.md"  # the agent's own summary
    assert result["costUsd"] is None
    assert "wrote src/new.py" in result["logTail"] and "wrote src/new.py" in done.stdout  # streamed and kept
    assert head(repo) == before and git(repo, "diff", "--cached", "--name-only") == ""


def test_a_file_changed_again_while_already_dirty_counts(repo: Path) -> None:
    (repo / "README.md").write_text("dirty before the step\n")
    hand_over(repo, file_block("README.md", "changed by the step"))
    _, result = run_entrypoint(repo)
    assert result["changedFiles"] == ["README.md"]


def test_agent_reporting_failure_fails_the_step(repo: Path) -> None:
    hand_over(repo, "@@FAIL tests do not pass\n" + file_block("a.py", "a = 1"))
    done, result = run_entrypoint(repo)
    assert done.returncode == 1
    assert (result["success"], result["summary"], result["exitCode"]) == (False, "tests do not pass", 0)
    assert result["changedFiles"] == ["a.py"]  # what it did is still reported


def test_agent_exiting_non_zero_fails_the_step(repo: Path) -> None:
    hand_over(repo, "@@EXIT 3\n")
    done, result = run_entrypoint(repo)
    assert done.returncode == 1
    assert (result["success"], result["exitCode"]) == (False, 3)
    assert result["summary"] == "Agent wrote no .jervis/result.json (agent exited with code 3)"


def test_success_claim_with_non_zero_exit_is_a_failure(repo: Path) -> None:
    hand_over(repo, file_block("a.py", "a = 1"))
    done, result = run_entrypoint(repo, command=["sh", "-c", f"{shlex.join(AGENT)}; exit 2"])
    assert done.returncode == 1 and result["success"] is False
    assert result["summary"] == "Wrote 1 file(s): a.py (agent exited with code 2)"


def test_exit_zero_without_a_result_still_leaves_one(repo: Path) -> None:
    """A stale result of an earlier step must not be mistaken for this step's."""
    hand_over(repo, "@@NO_RESULT\n" + file_block("a.py", "a = 1"))
    (repo / ".jervis" / "result.json").write_text(json.dumps({"success": True, "summary": "stale"}))
    done, result = run_entrypoint(repo)
    assert done.returncode == 1
    assert result["success"] is False and result["exitCode"] == 0
    assert result["summary"] == "Agent exited 0 but wrote no .jervis/result.json"
    assert result["changedFiles"] == []


def test_result_is_written_in_the_workspace_when_the_agent_made_jervis_a_symlink_out(repo: Path,
                                                                                       tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    hand_over(repo, "swap")
    done, result = run_entrypoint(repo, command=["sh", "-c", f"rm -rf .jervis && ln -s {outside} .jervis"])
    assert done.returncode == 1 and result["success"] is False  # read from the workspace's own .jervis/
    assert (repo / ".jervis").is_dir() and not (repo / ".jervis").is_symlink()
    assert list(outside.iterdir()) == []


def test_result_replaces_a_result_symlink_instead_of_writing_through_it(repo: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.json"
    victim.write_text('{"keep": true}')
    hand_over(repo, "link")
    done, _ = run_entrypoint(repo, command=["ln", "-s", str(victim), ".jervis/result.json"])
    assert done.returncode == 1
    assert victim.read_text() == '{"keep": true}'
    assert not (repo / ".jervis" / "result.json").is_symlink()
    assert json.loads((repo / ".jervis" / "result.json").read_text())["agent"] == "command"


@pytest.mark.parametrize(("agent_type", "command", "name"), [
    ("command", ["/nonexistent/agent"], "command"),
    ("aider", None, "aider"),  # not installed on this PATH
])
def test_missing_agent_binary_is_a_failed_step(repo: Path, agent_type: str, command: list[str] | None,
                                               name: str) -> None:
    hand_over(repo, "do something", files=["README.md"])
    done, result = run_entrypoint(repo, agent_type=agent_type, command=command, PATH="/usr/bin:/bin")
    assert done.returncode == 1
    assert result["success"] is False and result["exitCode"] is None
    assert result["summary"].startswith(f"Agent {name} could not be started: FileNotFoundError")
    assert result["changedFiles"] == [] and result["agent"] == name


def test_outside_git_the_agent_claim_is_used(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    hand_over(plain, file_block("a.py", "a = 1"))
    _, result = run_entrypoint(plain, command=["sh", "-c", f"echo x > unclaimed.txt && exec {shlex.join(AGENT)}"])
    assert result["success"] is True and result["changedFiles"] == ["a.py"]


@pytest.mark.parametrize("env", [
    {"AGENT_TYPE": "bogus"},
    {"AGENT_COMMAND": "python agent.py"},  # not a JSON list
    {"JERVIS_MODE": "git"},  # without ALLOW_GIT=true
])
def test_bad_environment_exits_2_with_a_failure_result(repo: Path, env: dict[str, str]) -> None:
    hand_over(repo, "x")
    environment = base_env(WORKSPACE_PATH=str(repo), AGENT_TYPE="command", AGENT_COMMAND=json.dumps(AGENT)) | env
    done = subprocess.run([sys.executable, str(ENTRYPOINT)], env=environment, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("jervis-entrypoint: ")
    result = json.loads((repo / ".jervis" / "result.json").read_text())
    assert result["success"] is False and result["summary"].startswith("Entrypoint cannot run: ")


def test_missing_workspace_exits_2(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ENTRYPOINT)], env=base_env(WORKSPACE_PATH=str(tmp_path / "nope")),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "WORKSPACE_PATH" in done.stderr


def test_missing_instructions_exit_2(repo: Path) -> None:
    done, result = run_entrypoint(repo)
    assert done.returncode == 2 and "instructions.md" in result["summary"]


def test_sigterm_is_forwarded_and_the_result_still_written(repo: Path) -> None:
    """A Job's PID 1 gets the SIGTERM: the agent must stop too, and the step is reported failed."""
    hand_over(repo, "@@SLEEP 30\n")
    environment = base_env(WORKSPACE_PATH=str(repo), AGENT_TYPE="command", AGENT_COMMAND=json.dumps(AGENT))
    process = subprocess.Popen([sys.executable, str(ENTRYPOINT)], env=environment, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if "sleeping 30" in line:
            break
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=10) == 1
    assert time.monotonic() - started < 5
    result = json.loads((repo / ".jervis" / "result.json").read_text())
    assert result["success"] is False and result["summary"].startswith("Agent stopped by SIGTERM")
    assert result["exitCode"] == -signal.SIGTERM


# -------------------------------------------------------------- Claude's JSON
FAKE_CLAUDE = textwrap.dedent('''\
    #!{python}
    """Fake Claude Code: records its argv and env, then prints the JSON shape FAKE_CLAUDE asks for."""
    import json, os, pathlib, sys
    pathlib.Path(os.environ["FAKE_CLAUDE_LOG"]).write_text(json.dumps(
        {{"argv": sys.argv[1:], "is_sandbox": os.environ.get("IS_SANDBOX")}}))
    mode = os.environ["FAKE_CLAUDE"]
    pathlib.Path("hello.txt").write_text("hi\\n")
    if mode == "own-result":
        pathlib.Path(".jervis/result.json").write_text(json.dumps({{"success": True, "summary": "My own words"}}))
    if mode == "text":
        print("Done, I think.")
        sys.exit(0)
    report = {{"type": "result", "subtype": "success", "is_error": False, "result": "Created hello.txt",
              "total_cost_usd": 0.0123, "num_turns": 2,
              "usage": {{"input_tokens": 1200, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 500,
                         "output_tokens": 80, "server_tool_use": {{"web_search_requests": 0}}}}}}
    if mode == "is-error":
        report.update(is_error=True, result="API Error: 401 invalid x-api-key", total_cost_usd=0)
    if mode == "max-turns":
        report.update(subtype="error_max_turns", is_error=True, result="")
    print("some progress line")
    print(json.dumps(report))
    sys.exit(1 if mode == "max-turns" else 0)
''')


@pytest.fixture
def fake_claude(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "claude"
    script.write_text(FAKE_CLAUDE.format(python=sys.executable))
    script.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize(("mode", "success", "summary", "cost", "exit_code"), [
    ("success", True, "Created hello.txt", 0.0123, 0),
    ("is-error", False, "Claude Code reported an error: API Error: 401 invalid x-api-key", 0.0, 0),
    ("max-turns", False, "Claude Code reported an error: error_max_turns (agent exited with code 1)", 0.0123, 1),
    ("text", False, "Claude Code printed no JSON result", None, 0),
    ("own-result", True, "My own words", 0.0123, 0),
])
def test_claude_json_result_decides(repo: Path, fake_claude: Path, tmp_path: Path, mode: str, success: bool,
                                    summary: str, cost: float | None, exit_code: int) -> None:
    """`subtype: success` with `is_error: true` is a failure; cost comes from `total_cost_usd`, tokens
    from `usage` (every prompt token, cache writes and reads included)."""
    (repo / ".claude").mkdir()
    (repo / ".claude" / "mcp.json").write_text("{}")
    hand_over(repo, "Create hello.txt", mcp_config=".claude/mcp.json", agent_files=[".claude/mcp.json"])
    log = tmp_path / "claude.json"
    done, result = run_entrypoint(repo, agent_type="claude", command=None, path_prefix=fake_claude,
                                  AGENT_MODEL="test-model", FAKE_CLAUDE=mode, FAKE_CLAUDE_LOG=str(log))
    assert (result["success"], result["summary"], result["costUsd"], result["exitCode"]) == (
        success, summary, cost, exit_code)
    assert done.returncode == (0 if success else 1)
    assert result["changedFiles"] == ["hello.txt"] and result["agent"] == "claude"
    assert result.get("tokens") == (None if mode == "text" else {"sent": 2000, "received": 80})
    call = json.loads(log.read_text())
    assert call["argv"] == ["-p", "Create hello.txt", "--output-format", "json", "--permission-mode",
                            "bypassPermissions", "--tools", "Bash,Read,Edit,Write",
                            "--mcp-config", str(repo / ".claude" / "mcp.json"), "--model", "test-model"]
    if os.geteuid() == 0:
        assert call["is_sandbox"] == "1"


# -------------------------------------------------------------------- git mode
def git_step(repo: Path, **plan: Any) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    jervis = repo / ".jervis"
    jervis.mkdir(exist_ok=True)
    (jervis / "git.json").write_text(json.dumps({"remote": "origin", **plan}))
    return run_entrypoint(repo, agent_type="", command=None, JERVIS_MODE="git", ALLOW_GIT="true")


COMMIT = {"action": "commit", "branch": "task/t1", "message": "task(t1): add a", "files": ["README.md", "src/a.py"],
          "trailer": "Jervis-Thread: t1"}


def test_commit_stages_only_the_listed_files_on_a_new_branch(repo: Path) -> None:
    (repo / "README.md").write_text("# changed\n")
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("a = 1\n")
    (repo / "other.txt").write_text("not listed\n")
    (repo / "staged.txt").write_text("staged by someone else\n")
    git(repo, "add", "staged.txt")

    done, result = git_step(repo, **COMMIT)

    assert done.returncode == 0, done.stdout + done.stderr
    assert result["success"] is True and result["changedFiles"] == ["README.md", "src/a.py"]
    assert result["commitSha"] == head(repo)
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "task/t1"
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["README.md", "src/a.py"]
    assert git(repo, "log", "-1", "--format=%B").strip() == "task(t1): add a\n\nJervis-Thread: t1"
    status = git(repo, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert "A  staged.txt" in status and "?? other.txt" in status  # untouched


def test_the_commit_runs_no_hook_or_fsmonitor_an_agent_planted_in_the_repository(repo: Path, tmp_path: Path) -> None:
    """The git step runs outside the agent's sandbox: programs in `.git/` (which the agent could
    write) never run there, while the commit itself is made."""
    marker = tmp_path / "ran.txt"
    for hook in ("pre-commit", "post-commit", "reference-transaction"):
        path = repo / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\necho {hook} >> {marker}\n")
        path.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(repo / ".git" / "hooks" / "pre-commit"))
    (repo / "README.md").write_text("# changed\n")

    done, result = git_step(repo, **(COMMIT | {"files": ["README.md"]}))

    assert done.returncode == 0 and result["success"] is True, done.stdout + done.stderr
    assert not marker.exists()
    git(repo, "status", "--short")  # a plain git on the same repository does run them
    assert marker.exists()


def test_commit_is_idempotent_by_trailer(repo: Path) -> None:
    (repo / "README.md").write_text("# changed\n")
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("a = 1\n")
    _, first = git_step(repo, **COMMIT)
    (repo / "README.md").write_text("# changed again after the commit\n")

    done, second = git_step(repo, **COMMIT)

    assert done.returncode == 0 and second["success"] is True
    assert second["commitSha"] == first["commitSha"] == head(repo)
    assert second["summary"].startswith("Already committed as ")
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "2"


def test_commit_on_an_existing_branch_and_nothing_to_commit_fails(repo: Path) -> None:
    git(repo, "branch", "task/t1")
    done, result = git_step(repo, **COMMIT | {"files": ["README.md"]})
    assert done.returncode == 1 and result["success"] is False
    assert "nothing" in result["summary"] and result["commitSha"] is None
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "task/t1"


def test_commit_stages_a_deletion(repo: Path) -> None:
    (repo / "README.md").unlink()
    done, result = git_step(repo, **COMMIT | {"files": ["README.md"]})
    assert done.returncode == 0 and result["success"] is True
    assert git(repo, "show", "--name-status", "--format=", "HEAD").split() == ["D", "README.md"]


def test_push_to_a_local_bare_remote(repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(repo, "remote", "add", "origin", str(remote))
    (repo / "README.md").write_text("# changed\n")
    _, committed = git_step(repo, **COMMIT | {"files": ["README.md"]})

    done, pushed = git_step(repo, action="push", branch="task/t1")

    assert done.returncode == 0, done.stdout + done.stderr
    assert pushed == {"success": True, "summary": "Pushed task/t1 to origin"}
    remote_sha = subprocess.run(["git", "--git-dir", str(remote), "rev-parse", "task/t1"], capture_output=True,
                                text=True, check=True).stdout.strip()
    assert remote_sha == committed["commitSha"]


def test_push_without_the_remote_fails(repo: Path) -> None:
    done, result = git_step(repo, action="push", branch="main")
    assert done.returncode == 1
    assert result == {"success": False, "summary": "No git remote 'origin' is configured"}


def test_push_rejected_by_the_remote_is_a_failure_not_a_force(repo: Path, tmp_path: Path) -> None:
    """A diverged remote branch is left alone: no --force, the step fails with git's message."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main:main")
    git(repo, "commit", "-q", "--amend", "-m", "rewritten")  # local history now diverges from the remote
    done, result = git_step(repo, action="push", branch="main")
    assert done.returncode == 1 and result["success"] is False
    assert "rejected" in result["summary"] or "non-fast-forward" in result["summary"]


def test_commit_without_a_configured_identity_uses_jervis(repo: Path) -> None:
    """A fresh pod has no git identity; the repository's own one is used when it has one."""
    git(repo, "config", "--unset", "user.name")
    git(repo, "config", "--unset", "user.email")
    (repo / "README.md").write_text("# changed\n")
    done, _ = git_step(repo, **COMMIT | {"files": ["README.md"]})
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(repo, "log", "-1", "--format=%an <%ae> / %cn <%ce>").strip() == (
        "Jervis <jervis@localhost> / Jervis <jervis@localhost>")


@pytest.mark.parametrize(("agent_type", "expected"), [
    ("aider", "http://ollama:11434|"), ("openhands", "http://ollama:11434|http://ollama:11434"), ("claude", "|"),
])
def test_local_llm_url_reaches_the_agent_under_the_names_litellm_reads(repo: Path, agent_type: str,
                                                                       expected: str) -> None:
    hand_over(repo, "inspect only")
    done, _ = run_entrypoint(repo, agent_type=agent_type, OLLAMA_URL="http://ollama:11434",
                             command=["sh", "-c", 'echo "llm=$OLLAMA_API_BASE|$LLM_BASE_URL"'])
    assert f"llm={expected}" in done.stdout


# ------------------------------------------------------------ git mode: a series
def record_tree(repo: Path) -> str:
    """What the orchestrator records after a goal: the workspace's content as a tree object, written with
    a temporary index (never `.git/index`)."""
    index = repo / ".git" / "test-snapshot-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    try:
        subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True, capture_output=True)
        return subprocess.run(["git", "write-tree"], cwd=repo, env=env, check=True, capture_output=True,
                              text=True).stdout.strip()
    finally:
        index.unlink(missing_ok=True)


def series_step(repo: Path, commits: list[dict[str, Any]]) -> Run:
    """A commit step with a series (no message, trailer or files of its own: the series has them)."""
    return git_step(repo, action="commit", branch="task/t1", commits=commits)


def planned(goal: int, files: list[str], tree: str | None) -> dict[str, Any]:
    return {"message": f"task(t1): goal {goal}", "trailer": f"Jervis-Goal: t1/g{goal}", "files": files,
            "tree": tree}


def series_since(repo: Path, base: str) -> list[str]:
    return git(repo, "rev-list", "--reverse", f"{base}..HEAD").split()


def show(repo: Path, revision: str, path: str) -> str:
    return git(repo, "show", f"{revision}:{path}")


def changed_in(repo: Path, sha: str) -> list[str]:
    return [field for field in git(repo, "show", "--name-status", "-z", "--format=", sha).split("\0") if field]


@pytest.fixture
def goals(repo: Path) -> tuple[str, list[dict[str, Any]]]:
    """Three goals on a repository with a dirty unrelated `notes.txt` and a pre-staged `staged.txt`:
    goal 1 changes a.py (T1), goal 2 changes a.py again and adds b.py (T2), goal 3 (no tree) deletes
    c.txt and changes b.py in the working tree. Returns the base commit and the series."""
    for name, text in (("a.py", "a = 0\n"), ("c.txt", "c\n"), ("notes.txt", "notes\n")):
        (repo / name).write_text(text)
    git(repo, "add", "a.py", "c.txt", "notes.txt")
    git(repo, "commit", "-q", "-m", "base")
    base = head(repo)
    (repo / "notes.txt").write_text("my own notes, not the task's\n")
    (repo / "staged.txt").write_text("staged by the user\n")
    git(repo, "add", "staged.txt")
    (repo / "a.py").write_text("a = 1\n")
    tree_1 = record_tree(repo)
    (repo / "a.py").write_text("a = 2\n")
    (repo / "b.py").write_text("b = 1\n")
    tree_2 = record_tree(repo)
    (repo / "c.txt").unlink()
    (repo / "b.py").write_text("b = 2\n")
    return base, [planned(1, ["a.py"], tree_1), planned(2, ["a.py", "b.py"], tree_2),
                  planned(3, ["c.txt", "b.py"], None)]


def test_series_commits_each_goal_as_it_was_after_it(repo: Path, goals: tuple[str, list[dict[str, Any]]]) -> None:
    base, commits = goals
    staged_before = git(repo, "ls-files", "-s", "staged.txt")

    done, result = series_step(repo, commits)

    assert done.returncode == 0, done.stdout + done.stderr
    shas = series_since(repo, base)
    assert result == {"success": True, "summary": f"Committed 3 commit(s) of 3 file(s) as {shas[-1][:12]} on task/t1",
                      "changedFiles": ["a.py", "b.py", "c.txt"], "commitSha": head(repo), "commits": shas}
    assert len(shas) == 3 and git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "task/t1"
    assert [git(repo, "log", "-1", "--format=%B", sha).strip() for sha in shas] == [
        f"task(t1): goal {n}\n\nJervis-Goal: t1/g{n}" for n in (1, 2, 3)]
    assert (show(repo, shas[0], "a.py"), changed_in(repo, shas[0])) == ("a = 1\n", ["M", "a.py"])
    assert (show(repo, shas[1], "a.py"), show(repo, shas[1], "b.py")) == ("a = 2\n", "b = 1\n")
    assert changed_in(repo, shas[1]) == ["M", "a.py", "A", "b.py"]
    assert changed_in(repo, shas[2]) == ["M", "b.py", "D", "c.txt"]
    assert git(repo, "status", "--porcelain", "--", "a.py", "b.py", "c.txt") == ""  # the index followed HEAD
    status = git(repo, "status", "--porcelain").splitlines()
    assert " M notes.txt" in status and "A  staged.txt" in status  # the user's changes are as they were
    assert git(repo, "ls-files", "-s", "staged.txt") == staged_before
    assert (repo / "notes.txt").read_text() == "my own notes, not the task's\n"
    assert git(repo, "log", "--format=", "--name-only", f"{base}..HEAD").split().count("notes.txt") == 0
    assert not (repo / ".git" / "jervis" / "commit-index").exists()


def test_series_rerun_commits_nothing_again(repo: Path, goals: tuple[str, list[dict[str, Any]]]) -> None:
    base, commits = goals
    _, first = series_step(repo, commits)

    done, second = series_step(repo, commits)

    assert done.returncode == 0, done.stdout + done.stderr
    assert second["success"] is True and second["commitSha"] == first["commitSha"] == head(repo)
    assert second["commits"] == first["commits"] == series_since(repo, base)
    assert second["summary"] == f"Already committed as {head(repo)[:12]} on task/t1 (3 commit(s))"


def test_series_after_a_crash_goes_on_from_the_last_commit_made(
        repo: Path, goals: tuple[str, list[dict[str, Any]]]) -> None:
    """The first run died after goal 1's commit (simulated by a series of that commit alone)."""
    base, commits = goals
    _, crashed = series_step(repo, commits[:1])
    assert crashed["success"] is True and len(series_since(repo, base)) == 1

    done, result = series_step(repo, commits)

    assert done.returncode == 0, done.stdout + done.stderr
    shas = series_since(repo, base)
    assert len(shas) == 3 and result["commits"] == shas and result["commits"][0] == crashed["commitSha"]
    assert result["summary"].endswith("on task/t1 (1 already committed)")
    messages = git(repo, "log", "--format=%B", f"{base}..HEAD")
    assert [messages.count(f"Jervis-Goal: t1/g{n}") for n in (1, 2, 3)] == [1, 1, 1]
    assert (show(repo, shas[1], "a.py"), show(repo, "HEAD", "b.py")) == ("a = 2\n", "b = 2\n")


def test_series_skips_a_goal_that_changed_nothing_also_on_a_rerun(repo: Path) -> None:
    """Goal 1 left README.md as it was: no commit. A re-run must not apply its tree again over goal 2's."""
    base = head(repo)
    unchanged = record_tree(repo)
    (repo / "README.md").write_text("# goal 2\n")
    commits = [planned(1, ["README.md"], unchanged), planned(2, ["README.md"], record_tree(repo)),
               planned(3, ["README.md"], None)]

    done, result = series_step(repo, commits)
    again, rerun = series_step(repo, commits)

    assert done.returncode == 0, done.stdout + done.stderr
    assert result["commits"] == series_since(repo, base) == [head(repo)]
    assert result["summary"].endswith("on task/t1 (2 unchanged)")
    assert git(repo, "log", "-1", "--format=%s").strip() == "task(t1): goal 2"
    assert (again.returncode, rerun["commits"]) == (0, result["commits"])
    assert show(repo, "HEAD", "README.md") == "# goal 2\n"


def test_series_that_changes_nothing_fails_like_a_commit_with_nothing_to_commit(repo: Path) -> None:
    done, result = series_step(repo, [planned(1, ["README.md"], record_tree(repo)), planned(2, [], None)])
    assert done.returncode == 1
    assert result == {"success": False, "summary": "Nothing to commit: none of the 2 commit(s) changes a file",
                      "changedFiles": ["README.md"], "commitSha": None, "commits": []}


def test_series_keeps_odd_names_modes_and_deletions(repo: Path) -> None:
    """Spaces, non-ASCII and pattern characters are plain names; the executable bit comes from the tree;
    a path missing from the tree is deleted; an unlisted file matching a listed name as a pattern is not
    committed."""
    base = head(repo)
    (repo / "dir with space").mkdir()
    (repo / "dir with space" / "žluťoučký kůň.py").write_text("kůň = 1\n")
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "st*r.txt").write_text("star\n")
    (repo / "stxr.txt").write_text("not listed\n")
    (repo / "README.md").unlink()
    tree = record_tree(repo)
    (repo / "dir with space" / "žluťoučký kůň.py").write_text("kůň = 2\n")
    (repo / "-dash.txt").write_text("dash\n")
    commits = [planned(1, ["dir with space/žluťoučký kůň.py", "run.sh", "README.md", "st*r.txt"], tree),
               planned(2, ["dir with space/žluťoučký kůň.py", "-dash.txt", "st*r.txt"], None)]

    done, result = series_step(repo, commits)

    assert done.returncode == 0, done.stdout + done.stderr
    first, second = series_since(repo, base)
    assert show(repo, first, "dir with space/žluťoučký kůň.py") == "kůň = 1\n"
    assert git(repo, "ls-tree", first, "run.sh").split()[0] == "100755"
    assert sorted(git(repo, "ls-tree", "-r", "--name-only", "-z", first).split("\0")) == [
        "", "dir with space/žluťoučký kůň.py", "run.sh", "st*r.txt"]
    assert show(repo, second, "dir with space/žluťoučký kůň.py") == "kůň = 2\n"
    assert changed_in(repo, second) == ["A", "-dash.txt", "M", "dir with space/žluťoučký kůň.py"]
    assert result["commitSha"] == second
    assert git(repo, "status", "--porcelain", "--untracked-files=all", "--", ".", ":!.jervis") == "?? stxr.txt\n"


def test_series_with_an_unknown_tree_fails_without_committing(repo: Path) -> None:
    base = head(repo)
    (repo / "README.md").write_text("# changed\n")
    done, result = series_step(repo, [planned(1, ["README.md"], "0" * 39 + "1")])
    assert done.returncode == 1 and result["success"] is False
    assert "is not in the repository" in result["summary"] and result["commitSha"] is None
    assert head(repo) == base and git(repo, "status", "--porcelain", "README.md") == " M README.md\n"


@pytest.mark.parametrize("commits", [
    "not a list",
    [["task(t1): goal 1", "Jervis-Goal: t1/g1", []]],
    [{"trailer": "Jervis-Goal: t1/g1", "files": [], "tree": None}],
    [{"message": " ", "trailer": "Jervis-Goal: t1/g1", "files": [], "tree": None}],
    [{"message": "m", "trailer": "", "files": [], "tree": None}],
    [{"message": "m", "trailer": "Jervis-Goal: t1/g1\nJervis-Goal: t1/g2", "files": [], "tree": None}],
    [{"message": "m", "trailer": "Jervis-Goal: t1/g1", "files": "a.py", "tree": None}],
    [{"message": "m", "trailer": "Jervis-Goal: t1/g1", "tree": None}],
    [{"message": "m", "trailer": "Jervis-Goal: t1/g1", "files": ["a.py", 1], "tree": None}],
    [{"message": "m", "trailer": "Jervis-Goal: t1/g1", "files": [], "tree": "HEAD"}],
    [{"message": "m", "trailer": "Jervis-Goal: t1/g1", "files": [], "tree": "a" * 41}],
    [{"message": "m", "trailer": "Jervis-Goal: t1/g1", "files": [], "tree": 1}],
    [planned(1, ["README.md"], None), planned(1, ["README.md"], None)],  # the same trailer twice
])
def test_series_malformed_commits_exit_2(repo: Path, commits: Any) -> None:
    done, result = series_step(repo, commits)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "git.json: commits" in done.stderr and result["success"] is False
    assert head(repo) == git(repo, "rev-parse", "main").strip()


# ------------------------------------------------------------------- test mode
TEST_RESULT_KEYS = {"success", "summary", "changedFiles", "exitCode", "costUsd", "logTail", "agent", "testOutcome"}


def run_tests_step(repo: Path, command: str | list[str], **plan: Any) -> Run:
    """A test-mode run as the orchestrator starts it: `.jervis/test.json`, the step's AGENT_TYPE still
    set, no ALLOW_GIT."""
    jervis = repo / ".jervis"
    jervis.mkdir(exist_ok=True)
    (jervis / "test.json").write_text(json.dumps({"command": command, **plan}))
    return run_entrypoint(repo, agent_type="claude", command=None, JERVIS_MODE="test")


def process_gone(pid: int, wait: float = 2.0) -> bool:
    """True once no such process runs (a zombie waiting for its parent to reap it counts as gone)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


@pytest.mark.parametrize(("command", "label"), [
    ('echo "collected 3 items"; echo "ci=$CI"', 'echo "collected 3 items"; echo "ci=$CI"'),
    (["sh", "-c", 'echo "collected 3 items"; echo "ci=$CI"'], "sh -c 'echo \"collected 3 items\"; echo \"ci=$CI\"'"),
])
def test_test_mode_passing_command_passes(repo: Path, command: str | list[str], label: str) -> None:
    """A string is a shell command line, a list an argv; both stream their output and keep it."""
    done, result = run_tests_step(repo, command)
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(result) == TEST_RESULT_KEYS
    assert result == {"success": True, "summary": f"Tests passed: {label}", "changedFiles": [], "exitCode": 0,
                      "costUsd": None, "logTail": "collected 3 items\nci=true", "agent": "test",
                      "testOutcome": "passed"}
    assert "collected 3 items" in done.stdout


def test_test_mode_failing_command_fails_with_its_output_in_the_log_tail(repo: Path) -> None:
    command = "echo 'FAILED tests/test_a.py::test_x - assert 1 == 2' >&2; exit 1"
    done, result = run_tests_step(repo, command)
    assert done.returncode == 1
    assert (result["success"], result["testOutcome"], result["exitCode"]) == (False, "failed", 1)
    assert result["summary"] == f"Tests failed (exit 1): {command}"
    assert "FAILED tests/test_a.py::test_x" in result["logTail"]  # stderr is merged into the output


def test_test_mode_log_tail_keeps_the_last_80_lines(repo: Path) -> None:
    done, result = run_tests_step(repo, ["seq", "1", "500"])
    assert done.returncode == 0
    assert result["logTail"].splitlines() == [str(n) for n in range(421, 501)]
    assert "\n1\n" in done.stdout  # every line still reached the log


def test_test_mode_log_tail_keeps_at_most_8000_characters_from_the_end(repo: Path) -> None:
    script = "for i in range(60): print(str(i).rjust(3, '0') + 'x' * 497)"
    _, result = run_tests_step(repo, [sys.executable, "-c", script])
    assert len(result["logTail"]) == 8000
    assert result["logTail"].endswith("059" + "x" * 497)


@pytest.mark.parametrize(("command", "exit_code", "reason"), [
    ("no-such-test-tool --all", 127, "no-such-test-tool"),  # the shell's "not found"
    (["/nonexistent/bin/pytest", "-q"], None, "FileNotFoundError"),  # could not even be started
    ("echo not executable > tool.sh && ./tool.sh", 126, "tool.sh"),
])
def test_test_mode_missing_test_command_is_not_run(repo: Path, command: str | list[str], exit_code: int | None,
                                                   reason: str) -> None:
    done, result = run_tests_step(repo, command)
    assert done.returncode == 1
    assert (result["success"], result["testOutcome"], result["exitCode"]) == (False, "not_run", exit_code)
    assert result["summary"].startswith("Tests could not run: ") and reason in result["summary"]


def test_test_mode_python_without_pytest_is_not_run(repo: Path) -> None:
    """`python -m pytest` with a Python that has no pytest (-S: no site-packages)."""
    _, result = run_tests_step(repo, [sys.executable, "-I", "-S", "-m", "pytest", "-q"])
    assert (result["testOutcome"], result["exitCode"]) == ("not_run", 1)
    assert result["summary"].startswith("Tests could not run: ")
    assert result["summary"].endswith("No module named pytest")


# ------------------------------------------------- test mode: pytest for the run
FAKE_PYTEST_MAIN = "import os, sys\nprint('fake pytest ran from', os.path.dirname(__file__))\nsys.exit(0)\n"


@pytest.fixture(scope="module")
def fake_pytest_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A find-links directory holding a tiny wheel named pytest (0.0.1, pure Python) whose `python -m
    pytest` says where it was imported from: the real pip installs it, offline, in well under a second."""
    import zipfile

    folder = tmp_path_factory.mktemp("wheels")
    files = {
        "pytest/__init__.py": "__version__ = '0.0.1'\n",
        "pytest/__main__.py": FAKE_PYTEST_MAIN,
        "pytest-0.0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: pytest\nVersion: 0.0.1\n",
        "pytest-0.0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: jervis-tests\nRoot-Is-Purelib: true\n"
                                        "Tag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + "pytest-0.0.1.dist-info/RECORD,,\n"
    with zipfile.ZipFile(folder / "pytest-0.0.1-py3-none-any.whl", "w") as wheel:
        for name, content in {**files, "pytest-0.0.1.dist-info/RECORD": record}.items():
            wheel.writestr(name, content)
    return folder


def bare_python(where: Path) -> Path:
    """A virtualenv's Python with neither pytest nor pip (`venv --without-pip`)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=60)
    return where / "bin" / "python"


def provisioning_env(tools: Path, find_links: Path, **extra: str) -> dict[str, str]:
    """pip offline from `find_links` only, no machine pip configuration; the tools cache in `tools`."""
    return {"JERVIS_TOOLS_DIR": str(tools), "JERVIS_PYTEST_SPEC": "pytest==0.0.1", "PIP_CONFIG_FILE": os.devnull,
            "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(find_links), **extra}


def run_tests_with(repo: Path, command: list[str], env: dict[str, str]) -> Run:
    (repo / ".jervis").mkdir(exist_ok=True)
    (repo / ".jervis" / "test.json").write_text(json.dumps({"command": command}))
    return run_entrypoint(repo, agent_type="claude", command=None, JERVIS_MODE="test", **env)


def test_test_mode_installs_pytest_for_the_run_outside_the_project_and_reuses_it(
        repo: Path, tmp_path: Path, fake_pytest_wheels: Path) -> None:
    """A Python without pytest (and without pip: the entrypoint's own pip installs for its version)
    gets pytest in the tools cache, first on PYTHONPATH; the project and its venv stay untouched."""
    python = bare_python(repo / ".venv")
    tools = tmp_path / "tools"
    env = provisioning_env(tools, fake_pytest_wheels)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    target = tools / f"pytest-py{version}"

    done, result = run_tests_with(repo, [str(python), "-m", "pytest", "-q"], env)

    assert (result["testOutcome"], result["exitCode"]) == ("passed", 0), done.stdout + done.stderr
    assert f"fake pytest ran from {target / 'pytest'}" in result["logTail"]
    assert f"installing pytest==0.0.1 into {target}" in done.stdout
    assert (target / ".jervis-installed").read_text().strip() == "pytest==0.0.1"
    assert sorted(path.name for path in tools.iterdir()) == [f"pytest-py{version}", f"pytest-py{version}.lock"]
    assert not list((repo / ".venv").rglob("pytest*"))  # nothing installed into the project's venv
    assert git(repo, "status", "--porcelain", "--untracked-files=all", "--", ".", ":!.venv", ":!.jervis") == ""

    again, result = run_tests_with(repo, [str(python), "-m", "pytest", "-q"], env)
    assert result["testOutcome"] == "passed"
    assert f"reusing {target}" in again.stdout and "installing" not in again.stdout


def test_test_mode_installs_pytest_with_the_interpreters_own_pip(repo: Path, tmp_path: Path,
                                                                  fake_pytest_wheels: Path) -> None:
    """A Python that has pip (here lent through PYTHONPATH) but not pytest installs with its own pip."""
    import pip

    python = bare_python(tmp_path / "venv")
    lent = tmp_path / "lent"
    lent.mkdir()
    (lent / "pip").symlink_to(Path(pip.__file__).parent)
    env = provisioning_env(tmp_path / "tools", fake_pytest_wheels, PYTHONPATH=str(lent))

    done, result = run_tests_with(repo, [str(python), "-m", "pytest"], env)

    assert result["testOutcome"] == "passed", done.stdout + done.stderr
    assert "fake pytest ran from" in result["logTail"] and "installed in" in done.stdout


def test_test_mode_pytest_that_cannot_be_installed_is_not_run(repo: Path, tmp_path: Path) -> None:
    """Offline (no index, nothing to find): the tests did not run, and the summary says why."""
    python = bare_python(tmp_path / "venv")
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    tools = tmp_path / "tools"

    done, result = run_tests_with(repo, [str(python), "-m", "pytest", "-q"], provisioning_env(tools, empty))

    assert done.returncode == 1
    assert (result["success"], result["testOutcome"], result["exitCode"]) == (False, "not_run", None)
    assert result["summary"].startswith(f"Tests could not run: pytest is not installed for {python} and "
                                        "installing it failed: ")
    assert "pytest==0.0.1" in result["summary"]  # pip's own last word: no matching distribution
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert [path.name for path in tools.iterdir()] == [f"pytest-py{version}.lock"]  # no half install left


def test_test_mode_python_with_pytest_installs_nothing(repo: Path, tmp_path: Path) -> None:
    (repo / "test_a.py").write_text("def test_a():\n    assert True\n")
    tools = tmp_path / "tools"
    done, result = run_tests_with(repo, [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                                  {"JERVIS_TOOLS_DIR": str(tools), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert result["testOutcome"] == "passed" and "1 passed" in result["logTail"], done.stdout
    assert "pytest for Python" not in done.stdout and not tools.exists()


def test_test_mode_other_missing_python_module_is_a_failure(repo: Path) -> None:
    """Only pytest's own absence is special: a missing module may well be the agent's doing."""
    _, result = run_tests_step(repo, [sys.executable, "-m", "this_module_does_not_exist"])
    assert (result["testOutcome"], result["exitCode"]) == ("failed", 1)
    assert "No module named this_module_does_not_exist" in result["logTail"]


def test_test_mode_make_without_a_test_target_is_not_run(repo: Path) -> None:
    (repo / "Makefile").write_text("all:\n\t@echo built\n")
    _, result = run_tests_step(repo, "make test")
    assert (result["testOutcome"], result["exitCode"]) == ("not_run", 2)
    assert result["summary"].startswith("Tests could not run: make: *** No rule to make target 'test'")


def test_test_mode_make_test_failing_is_a_failure(repo: Path) -> None:
    (repo / "Makefile").write_text("test:\n\t@echo 1 failed\n\t@exit 1\n")
    _, result = run_tests_step(repo, "make test")
    assert (result["testOutcome"], result["summary"]) == ("failed", "Tests failed (exit 2): make test")


def test_test_mode_timeout_fails_and_kills_the_command_and_its_children(repo: Path, tmp_path: Path) -> None:
    child = tmp_path / "child.pid"
    started = time.monotonic()
    done, result = run_tests_step(repo, f"sleep 60 & echo $! > {child}; echo started; wait", timeout_seconds=1)
    assert time.monotonic() - started < 10
    assert done.returncode == 1
    assert (result["success"], result["testOutcome"], result["exitCode"]) == (False, "failed", -signal.SIGTERM)
    assert result["summary"] == f"Tests timed out after 1 s: sleep 60 & echo $! > {child}; echo started; wait"
    assert result["logTail"] == "started"
    assert process_gone(int(child.read_text()))


def test_test_mode_timeout_kills_a_command_that_ignores_sigterm(repo: Path, tmp_path: Path) -> None:
    """SIGKILL follows 5 s after the SIGTERM."""
    child = tmp_path / "child.pid"
    started = time.monotonic()
    done, result = run_tests_step(repo, f"trap '' TERM; sleep 60 & echo $! > {child}; wait", timeout_seconds=0.5)
    elapsed = time.monotonic() - started
    assert 5 <= elapsed < 15
    assert (done.returncode, result["testOutcome"], result["exitCode"]) == (1, "failed", -signal.SIGKILL)
    assert result["summary"].startswith("Tests timed out after 0.5 s: ")
    assert process_gone(int(child.read_text()))


def test_test_mode_leftover_background_process_does_not_hold_up_the_result(repo: Path, tmp_path: Path) -> None:
    """A server the tests started and left running keeps the output open; it is stopped, not waited for."""
    child = tmp_path / "child.pid"
    started = time.monotonic()
    done, result = run_tests_step(repo, f"sleep 60 & echo $! > {child}; echo 3 passed")
    assert time.monotonic() - started < 10
    assert (done.returncode, result["testOutcome"], result["logTail"]) == (0, "passed", "3 passed")
    assert process_gone(int(child.read_text()))


def test_test_mode_sigterm_is_forwarded_to_the_tests(repo: Path, tmp_path: Path) -> None:
    child = tmp_path / "child.pid"
    (repo / ".jervis").mkdir()
    (repo / ".jervis" / "test.json").write_text(json.dumps({"command": f"sleep 60 & echo $! > {child}; "
                                                                       "echo running; wait"}))
    environment = base_env(WORKSPACE_PATH=str(repo), JERVIS_MODE="test")
    process = subprocess.Popen([sys.executable, str(ENTRYPOINT)], env=environment, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if "running" in line and "[jervis-entrypoint]" not in line:
            break
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=10) == 1
    assert time.monotonic() - started < 5
    result = json.loads((repo / ".jervis" / "result.json").read_text())
    assert (result["testOutcome"], result["summary"]) == (
        "failed", f"Tests stopped by SIGTERM: sleep 60 & echo $! > {child}; echo running; wait")
    assert process_gone(int(child.read_text()))


@pytest.mark.parametrize("plan", [
    None,  # no test.json at all
    {"command": ""},
    {"command": []},
    {"command": ["make", 1]},
    {"command": {"run": "make test"}},
    {"command": "make test", "timeout_seconds": "60"},
    {"command": "make test", "timeout_seconds": 0},
])
def test_test_mode_missing_or_invalid_test_json_exits_2(repo: Path, plan: dict[str, Any] | None) -> None:
    if plan is not None:
        (repo / ".jervis").mkdir()
        (repo / ".jervis" / "test.json").write_text(json.dumps(plan))
    done, result = run_entrypoint(repo, agent_type="claude", command=None, JERVIS_MODE="test")
    assert done.returncode == 2 and "test.json" in done.stderr
    assert result["success"] is False and result["summary"].startswith("Entrypoint cannot run: ")
    assert result["agent"] == "test"


def test_test_mode_needs_no_allow_git_and_ignores_the_agent_settings(repo: Path) -> None:
    """The runner passes the step's agent settings along; none of them is checked in test mode."""
    (repo / ".jervis").mkdir()
    (repo / ".jervis" / "test.json").write_text(json.dumps({"command": "echo ok"}))
    environment = base_env(WORKSPACE_PATH=str(repo), JERVIS_MODE="test", ALLOW_GIT="false", AGENT_TYPE="bogus",
                           AGENT_COMMAND="not json", AGENT_EXTRA_ARGS="[1]")
    done = subprocess.run([sys.executable, str(ENTRYPOINT)], env=environment, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((repo / ".jervis" / "result.json").read_text())
    assert (result["testOutcome"], result["agent"]) == ("passed", "test")


def test_the_tokens_the_agent_prints_are_added_up_in_the_result(repo: Path) -> None:
    hand_over(repo, "@@SAY Tokens: 2.6k sent, 271 received.\n@@SAY Tokens: 1,204 sent, 29 received. Cost: $0.01\n"
                    "@@SAY no Tokens: 5 sent, 5 received here\n" + file_block("a.py", "x = 1"))
    done, result = run_entrypoint(repo)
    assert done.returncode == 0, done.stderr
    assert result["tokens"] == {"sent": 3804, "received": 300}


def test_an_agent_that_prints_no_token_line_reports_no_tokens(repo: Path) -> None:
    hand_over(repo, file_block("a.py", "x = 1"))
    _, result = run_entrypoint(repo)
    assert "tokens" not in result


# ------------------------------------------------------------ aider: the answer's cap
FAKE_AIDER = """#!{python}
import json, os, sys
argv = sys.argv[1:]
settings = argv[argv.index("--model-settings-file") + 1]
with open(os.environ["FAKE_AIDER_LOG"], "w") as log:
    json.dump({{"argv": argv, "settings": open(settings).read()}}, log)
"""


@pytest.mark.parametrize(("files", "sizes", "override", "cap"), [
    (["tiny.py"], [300], None, 1536),  # a one-line change still has room for the format and a sentence
    (["main.py"], [3300], None, 3224),  # slugify's 98-line __main__.py: 2 × 1,100 tokens + 1,024
    (["a.py", "b.py"], [30_000, 30_000], None, 8192),  # never past Aider's own default cap
    (["new.py"], [None], None, 1536),  # a file still to create
    (["main.py"], [3300], "777", 777),  # AGENT_MAX_OUTPUT_TOKENS decides when set
])
def test_aider_answers_are_capped_in_proportion_to_the_files_it_edits(
        repo: Path, tmp_path: Path, files: list[str], sizes: list[int | None], override: str | None, cap: int) -> None:
    for name, size in zip(files, sizes, strict=True):
        if size is not None:
            (repo / name).write_text("x" * size)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "aider").write_text(FAKE_AIDER.format(python=sys.executable))
    (bin_dir / "aider").chmod(0o755)
    hand_over(repo, "Change it", files=files)
    log = tmp_path / "aider.json"
    extra = {"AGENT_MAX_OUTPUT_TOKENS": override} if override else {}
    run_entrypoint(repo, agent_type="aider", command=None, path_prefix=bin_dir, AGENT_MODEL="openai/m",
                   FAKE_AIDER_LOG=str(log), **extra)
    call = json.loads(log.read_text())
    assert call["settings"] == f"- name: aider/extra_params\n  extra_params:\n    max_tokens: {cap}\n"
    assert call["argv"][-len(files):] == files
    # one message per process: its history is never summarised (a model call Aider waits for at exit)
    assert call["argv"][call["argv"].index("--max-chat-history-tokens") + 1] == "1000000"
