"""Junie's side of the entrypoint contract, with a stand-in `junie` (the real CLI downloads its
binary from JetBrains' GitHub releases at install, so it cannot be installed without internet; the
image builds it where that is allowed, agent-images/README.md).

The stand-in is an executable named `junie` first on PATH: it records its argv and the variables
Junie reads, and does what the task says (writes a file) or fails as told, so the entrypoint's
command line, its judgement and what reaches `result.json` are checked against the contract
(agent-images/CONTRACT.md) and the image's Dockerfile."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.agent_images.test_entrypoint import hand_over, run_entrypoint
from tests.dockerfile_parser import env_pairs, parse_dockerfile
from tests.support import make_git_repo

STAND_IN = '''#!{python}
import json, os, sys
from pathlib import Path
Path(os.environ["JUNIE_LOG"]).write_text(json.dumps({{
    "argv": sys.argv[1:], "cwd": os.getcwd(), "api_key": os.environ.get("JUNIE_API_KEY"),
    "skip_update": os.environ.get("JUNIE_SKIP_UPDATE_CHECK")}}))
if os.environ.get("JUNIE_FAIL"):
    print("Error: authentication failed (no JetBrains account or JUNIE_API_KEY)", file=sys.stderr)
    sys.exit(3)
task = sys.argv[sys.argv.index("--task") + 1]
project = Path(sys.argv[sys.argv.index("--project") + 1])
if "hello.txt" in task:
    (project / "hello.txt").write_text("hello from junie\\n")
print("Junie: task done")
'''


@pytest.fixture
def junie_bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "junie-bin"
    bin_dir.mkdir()
    script = bin_dir / "junie"
    script.write_text(STAND_IN.format(python=sys.executable))
    script.chmod(0o755)
    return bin_dir


def test_junie_gets_its_task_project_model_and_mcp_config_and_its_change_is_reported(
        tmp_path: Path, junie_bin: Path) -> None:
    repo = make_git_repo(tmp_path / "repo")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "mcp.json").write_text("{}")
    hand_over(repo, "Create hello.txt saying hello", mcp_config=".claude/mcp.json", agent_files=[".claude/mcp.json"])
    log = tmp_path / "junie.json"

    done, result = run_entrypoint(repo, agent_type="junie", command=None, path_prefix=junie_bin,
                                  AGENT_MODEL="claude-sonnet-4-5", JUNIE_API_KEY="jb-key", JUNIE_LOG=str(log))

    assert done.returncode == 0, done.stderr
    assert (result["success"], result["agent"], result["changedFiles"]) == (True, "junie", ["hello.txt"])
    call = json.loads(log.read_text())
    assert call["argv"] == ["--task", "Create hello.txt saying hello", "--project", str(repo), "--skip-update-check",
                            "--mcp-location", str(repo / ".claude" / "mcp.json"), "--model", "claude-sonnet-4-5"]
    assert call["cwd"] == str(repo) and call["api_key"] == "jb-key"
    assert (repo / "hello.txt").read_text() == "hello from junie\n"


def test_a_failing_junie_fails_the_step_with_its_exit_code(tmp_path: Path, junie_bin: Path) -> None:
    repo = make_git_repo(tmp_path / "repo")
    hand_over(repo, "Create hello.txt")
    done, result = run_entrypoint(repo, agent_type="junie", command=None, path_prefix=junie_bin,
                                  JUNIE_LOG=str(tmp_path / "junie.json"), JUNIE_FAIL="1")
    assert done.returncode == 1
    assert not result["success"] and result["exitCode"] == 3
    assert result["summary"] == "Agent junie failed (agent exited with code 3)"
    assert result["changedFiles"] == [] and not (repo / "hello.txt").exists()


def test_without_junie_installed_the_step_fails_saying_so(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo")
    hand_over(repo, "Create hello.txt")
    done, result = run_entrypoint(repo, agent_type="junie", command=None, PATH="/usr/bin:/bin")
    assert done.returncode == 1 and not result["success"]
    assert result["summary"].startswith("Agent junie could not be started: FileNotFoundError")


def test_the_junie_image_installs_the_pinned_cli_as_its_user_and_never_self_updates() -> None:
    dockerfile = Path(__file__).resolve().parents[2] / "agent-images" / "junie" / "Dockerfile"
    instructions = parse_dockerfile(dockerfile.read_text())
    env: dict[str, str] = {}
    for instruction in instructions:
        if instruction.keyword == "ENV":
            env |= env_pairs(instruction.args)
    assert env["AGENT_TYPE"] == "junie" and env["JUNIE_SKIP_UPDATE_CHECK"] == "1"
    version = next(i.args.split("=", 1)[1] for i in instructions if i.keyword == "ARG"
                   and i.args.startswith("JUNIE_VERSION="))
    users = [index for index, i in enumerate(instructions) if i.keyword == "USER"]
    installs = [index for index, i in enumerate(instructions)
                if i.keyword == "RUN" and 'npm install -g "@jetbrains/junie@${JUNIE_VERSION}"' in i.args]
    assert version == "3110.7.0" and installs and users and users[0] < installs[0]  # as uid 1000, into ~/.local
    assert "junie --version" in instructions[installs[0]].args  # the build fails if the binary did not arrive
    assert env["PATH"].split(":")[:2] == ["/opt/jervis/venv/bin", "/home/node/.local/bin"]
