"""Workspaces on the shared volume (app/agents/workspace.py): path guard, hand-over files, cleanup."""

from __future__ import annotations

import contextvars
import json
import os
from pathlib import Path

import pytest

from app.agents.control import AgentControl, use_control
from app.agents.workspace import (
    AGENT_RUNTIME_FILES,
    KB_MCP_SERVER,
    ResultFileError,
    StepBrief,
    WorkspaceError,
    WorkspaceManager,
    WorkspaceMissingError,
)
from tests.support import git, make_git_repo

HANDOVER_FILES = {"instructions.md", "task.json", "kb-context.md", "environment.json", "environment.md",
                  "manifest.json"}
KB_ENV = {"CLIENT_ID": "c1", "PROJECT_ID": "p1", "KB_URL": "http://kb:8080", "KB_WRITE_URL": "http://kb-write:8080"}
ENVIRONMENT = {"namespace": "env-webshop", "agentInstructions": "Use port 8080.",
               "components": [{"name": "postgres", "type": "DATABASE", "host": "pg.svc", "image": "postgres:16",
                               "ports": [{"container": 5432, "service": 5432}]}]}


@pytest.fixture
def manager(root: Path) -> WorkspaceManager:
    return WorkspaceManager(root)


def prepare(manager: WorkspaceManager, workspace: Path, **overrides: object) -> Path:
    """The hand-over into `workspace`, created first as a clone would be (prepare creates none)."""
    workspace.mkdir(parents=True, exist_ok=True)
    args = {"agent_type": "command", "instructions": "# Do it\n", "task": {"id": "t1", "client_id": "c1"},
            "kb_context": "## KB\n- fact", "environment": ENVIRONMENT, "kb_env": KB_ENV} | overrides
    return manager.prepare(workspace, StepBrief(**args))  # type: ignore[arg-type]


def test_resolve_returns_the_path_under_data_root_when_path_is_relative(manager: WorkspaceManager,
                                                                       root: Path) -> None:
    assert manager.resolve("clients/c1/default") == root.resolve() / "clients/c1/default"


def test_resolve_allows_dot_segments_that_stay_inside(manager: WorkspaceManager, root: Path) -> None:
    assert manager.resolve("clients/./c1") == root.resolve() / "clients/c1"


@pytest.mark.parametrize("path", ["..", "../other", "clients/../../etc", "a/../../b"])
def test_resolve_raises_workspace_error_when_path_contains_dotdot(manager: WorkspaceManager, path: str) -> None:
    with pytest.raises(WorkspaceError, match=r"\.\."):
        manager.resolve(path)


@pytest.mark.parametrize("path", ["/abs", "/", "", "a\x00b"])
def test_resolve_raises_workspace_error_when_path_is_absolute_or_empty(manager: WorkspaceManager, path: str) -> None:
    with pytest.raises(WorkspaceError, match="relative"):
        manager.resolve(path)


def test_resolve_raises_workspace_error_when_a_symlink_leads_outside(manager: WorkspaceManager, root: Path,
                                                                     tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "clients").mkdir()
    (root / "clients" / "evil").symlink_to(outside)
    with pytest.raises(WorkspaceError, match="escapes"):
        manager.resolve("clients/evil")
    with pytest.raises(WorkspaceError, match="escapes"):
        manager.resolve("clients/evil/deeper")


def test_resolve_follows_a_symlink_that_stays_inside(manager: WorkspaceManager, root: Path) -> None:
    target = root / "real" / "project"
    target.mkdir(parents=True)
    (root / "alias").symlink_to(root / "real")
    assert manager.resolve("alias/project") == target.resolve()


def test_prepare_writes_the_five_handover_files(manager: WorkspaceManager, root: Path) -> None:
    workspace = root / "ws"
    jervis = prepare(manager, workspace)
    assert jervis == workspace / ".jervis"
    assert {p.name for p in jervis.iterdir()} == HANDOVER_FILES
    assert (jervis / "instructions.md").read_text() == "# Do it\n"
    assert json.loads((jervis / "task.json").read_text()) == {
        "id": "t1", "client_id": "c1", "files": [], "read_files": [], "agent_type": "command", "mcp_config": None,
        "agent_files": []}
    assert (jervis / "kb-context.md").read_text() == "## KB\n- fact"
    assert json.loads((jervis / "environment.json").read_text()) == ENVIRONMENT
    environment_md = (jervis / "environment.md").read_text()
    assert "Namespace: env-webshop" in environment_md and "**postgres** (DATABASE)" in environment_md
    assert "Use port 8080." in environment_md


def test_prepare_writes_placeholders_when_kb_and_environment_are_empty(manager: WorkspaceManager,
                                                                       root: Path) -> None:
    jervis = prepare(manager, root / "ws", kb_context="", environment=None)
    assert (jervis / "kb-context.md").read_text() == "_No KB context available._\n"
    assert json.loads((jervis / "environment.json").read_text()) == {}
    assert (jervis / "environment.md").read_text() == "_No environment defined._\n"


def test_prepare_removes_a_stale_result_of_an_earlier_step(manager: WorkspaceManager, root: Path) -> None:
    jervis = prepare(manager, root / "ws")
    (jervis / "result.json").write_text('{"success": true}')
    prepare(manager, root / "ws", instructions="step 2")
    assert not (jervis / "result.json").exists()
    assert (jervis / "instructions.md").read_text() == "step 2"


def test_prepare_excludes_agent_files_from_git_idempotently(manager: WorkspaceManager, root: Path) -> None:
    repo = make_git_repo(root / "repo")
    exclude = repo / ".git" / "info" / "exclude"
    exclude.write_text("# user's own rule\n*.log")  # no trailing newline on purpose
    prepare(manager, repo)
    prepare(manager, repo)
    lines = exclude.read_text().splitlines()
    assert lines[:2] == ["# user's own rule", "*.log"]
    assert lines[2:] == [f"/{name}" for name in (".jervis", *AGENT_RUNTIME_FILES)]
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_prepare_does_not_create_git_metadata_in_a_plain_directory(manager: WorkspaceManager, root: Path) -> None:
    prepare(manager, root / "plain")
    assert not (root / "plain" / ".git").exists()


def test_read_result_parses_camel_case_changed_files(manager: WorkspaceManager, root: Path) -> None:
    jervis = prepare(manager, root / "ws")
    (jervis / "result.json").write_text(json.dumps({"success": True, "summary": "ok", "changedFiles": ["a.py"]}))
    result = manager.read_result(root / "ws")
    assert (result.success, result.summary, result.changed_files) == (True, "ok", ["a.py"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no .jervis/result.json"),
        ("not json", "invalid .jervis/result.json"),
        ('{"summary": "no success key"}', "invalid .jervis/result.json"),
        ('{"success": "maybe"}', "invalid .jervis/result.json"),
        ('{"success": true, "changedFiles": "a.py"}', "invalid .jervis/result.json"),
        ("", "invalid .jervis/result.json"),
    ],
    ids=["missing", "not-json", "no-success", "bad-success", "files-not-list", "empty"],
)
def test_read_result_raises_result_file_error_when_result_is_missing_or_invalid(
    manager: WorkspaceManager, root: Path, content: str | None, message: str
) -> None:
    jervis = prepare(manager, root / "ws")
    if content is not None:
        (jervis / "result.json").write_text(content)
    with pytest.raises(ResultFileError, match=message):
        manager.read_result(root / "ws")


def test_cleanup_removes_the_handover_directory_and_keeps_the_work(manager: WorkspaceManager, root: Path) -> None:
    workspace = root / "ws"
    prepare(manager, workspace)
    (workspace / "app.py").write_text("print('work')\n")
    manager.cleanup(workspace)
    assert not (workspace / ".jervis").exists()
    assert (workspace / "app.py").read_text() == "print('work')\n"
    assert manager.cleanup(workspace) is None  # nothing left to remove: no error


def test_cleanup_removes_a_jervis_link_itself_and_a_jervis_file(manager: WorkspaceManager, root: Path,
                                                                tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not the workspace's")
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / ".jervis").symlink_to(elsewhere)
    assert manager.cleanup(workspace) is None
    assert not os.path.lexists(workspace / ".jervis") and (elsewhere / "keep.txt").exists()
    (workspace / ".jervis").write_text("a file where the folder goes")
    assert manager.cleanup(workspace) is None and not os.path.lexists(workspace / ".jervis")


def test_read_result_refuses_a_non_regular_or_oversized_result(manager: WorkspaceManager, root: Path) -> None:
    workspace = root / "ws"
    (workspace / ".jervis").mkdir(parents=True)
    os.mkfifo(workspace / ".jervis" / "result.json")
    with pytest.raises(ResultFileError, match="not a regular file"):
        manager.read_result(workspace)
    (workspace / ".jervis" / "result.json").unlink()
    (workspace / ".jervis" / "result.json").write_text('{"success": true, "summary": "' + "x" * 1_100_000 + '"}')
    with pytest.raises(ResultFileError, match="more than the 1048576 allowed"):
        manager.read_result(workspace)


def test_cleanup_of_a_suspended_run_leaves_the_handover_to_the_agent_still_working(manager: WorkspaceManager,
                                                                                  root: Path) -> None:
    workspace = root / "ws"
    prepare(manager, workspace)
    control = AgentControl()

    def cleanup_in_the_run_task() -> None:
        use_control(control)
        manager.cleanup(workspace)

    control.suspend("shutdown")
    contextvars.copy_context().run(cleanup_in_the_run_task)
    assert {p.name for p in (workspace / ".jervis").iterdir()} == HANDOVER_FILES

    contextvars.copy_context().run(manager.cleanup, workspace)  # another task, not suspended
    assert not (workspace / ".jervis").exists()


@pytest.mark.parametrize("path", [".", "./", "clients/.."])
def test_resolve_rejects_data_root_itself(tmp_path: Path, path: str) -> None:
    manager = WorkspaceManager(tmp_path)
    with pytest.raises(WorkspaceError):
        manager.resolve(path)


def test_prepare_writes_claude_files_where_the_repository_has_none(manager: WorkspaceManager, root: Path) -> None:
    repo = make_git_repo(root / "repo")
    (repo / "AGENTS.md").write_text("Use tabs.\n")
    git(repo, "add", "AGENTS.md")
    git(repo, "commit", "-qm", "guide")
    jervis = prepare(manager, repo, agent_type="claude", forbidden_files=["*.env"])

    claude_md = (repo / "CLAUDE.md").read_text()
    assert "Never run git commands" in claude_md and "*.env" in claude_md and "AGENTS.md" in claude_md
    mcp = json.loads((repo / ".claude" / "mcp.json").read_text())
    assert mcp["mcpServers"]["jervis-kb"] == {"command": "python3", "args": [KB_MCP_SERVER], "env": KB_ENV}
    task = json.loads((jervis / "task.json").read_text())
    assert task["mcp_config"] == ".claude/mcp.json" and sorted(task["agent_files"]) == [".claude/mcp.json",
                                                                                          "CLAUDE.md"]
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""  # nothing of ours shows


def test_prepare_never_touches_the_repositorys_own_claude_md(manager: WorkspaceManager, root: Path) -> None:
    repo = make_git_repo(root / "repo")
    (repo / "CLAUDE.md").write_text("# Our own rules\n")
    git(repo, "add", "CLAUDE.md")
    git(repo, "commit", "-qm", "rules")
    prepare(manager, repo, agent_type="claude")
    assert (repo / "CLAUDE.md").read_text() == "# Our own rules\n"
    manager.cleanup(repo)
    assert (repo / "CLAUDE.md").read_text() == "# Our own rules\n"
    assert not (repo / ".claude").exists()
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_git_variant_of_claude_md_allows_commit_but_not_force_push(manager: WorkspaceManager, root: Path) -> None:
    jervis = prepare(manager, root / "ws", agent_type="claude",
                     git_plan={"action": "commit", "branch": "task/t1", "files": ["a.py"]})
    claude_md = (root / "ws" / "CLAUDE.md").read_text()
    assert "`git commit`" in claude_md
    assert "Forbidden: `git push --force`, `git reset --hard`, `git rebase`" in claude_md
    assert json.loads((jervis / "git.json").read_text())["branch"] == "task/t1"


def test_aider_config_reads_context_and_repository_guides(manager: WorkspaceManager, root: Path) -> None:
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("guide")
    prepare(manager, workspace, agent_type="aider")
    conf = (workspace / ".aider.conf.yml").read_text()
    assert "auto-commits: false" in conf and "  - .jervis/kb-context.md" in conf and "  - AGENTS.md" in conf


@pytest.mark.parametrize(("environment", "read"), [
    (ENVIRONMENT, True),
    ({"testCommand": "python -m pytest -q"}, False),  # the orchestrator's command only: nothing for the agent
    (None, False),
])
def test_aider_reads_the_environment_only_when_it_describes_one(manager: WorkspaceManager, root: Path,
                                                                 environment: dict | None, read: bool) -> None:
    workspace = root / "ws"
    workspace.mkdir()
    prepare(manager, workspace, agent_type="aider", environment=environment)
    assert ("  - .jervis/environment.md" in (workspace / ".aider.conf.yml").read_text()) is read


def test_cleanup_removes_what_the_step_added_and_nothing_else(manager: WorkspaceManager, root: Path) -> None:
    repo = make_git_repo(root / "repo")
    (repo / ".aider.chat.history.md").write_text("the user's own history")
    prepare(manager, repo, agent_type="aider")
    (repo / ".aider.input.history").write_text("written by aider during the step")
    (repo / "feature.py").write_text("work")

    manager.cleanup(repo)

    assert not (repo / ".aider.conf.yml").exists() and not (repo / ".aider.input.history").exists()
    assert (repo / ".aider.chat.history.md").read_text() == "the user's own history"
    assert (repo / "feature.py").read_text() == "work" and not (repo / ".jervis").exists()


def test_prepare_refuses_a_workspace_that_is_not_there_and_creates_nothing(manager: WorkspaceManager,
                                                                            root: Path) -> None:
    missing = root / "clients" / "c1" / "gone"
    with pytest.raises(WorkspaceMissingError, match=r"clients/c1/gone does not exist under DATA_ROOT \(.*\)"):
        manager.prepare(missing, StepBrief(agent_type="command", instructions="x", task={"id": "t1"}))
    assert not (root / "clients").exists()


def test_existing_names_a_file_standing_where_the_workspace_should_be(manager: WorkspaceManager, root: Path) -> None:
    (root / "ws").write_text("not a directory")
    with pytest.raises(WorkspaceMissingError, match="ws is not a directory under DATA_ROOT"):
        manager.existing("ws")
    (root / "real").mkdir()
    assert manager.existing("real") == root.resolve() / "real"
