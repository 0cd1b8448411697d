"""Static checks of the agent Dockerfiles (no Docker engine here, so nothing is built).

The shared parser (`tests/dockerfile_parser.py`) checks what the images promise:
valid instructions, pinned base images, a non-root numeric USER before the ENTRYPOINT, the shared
entrypoint and KB MCP server copied in, every COPY source present in the build context
(`docker build -f agent-images/<agent>/Dockerfile agent-images`), git with `safe.directory`.
"""

from __future__ import annotations

import re

import pytest

from app.agents.programs.openhands import OPENHANDS_SPECS
from tests.agent_images.conftest import REPO_ROOT
from tests.dockerfile_parser import (
    KEYWORDS,
    Instruction,
    copy_sources,
    env_pairs,
    exec_form,
    image_is_pinned,
    parse_dockerfile,
)

CONTEXT = REPO_ROOT / "agent-images"
AGENTS = ("aider", "claude", "openhands", "junie")
#: The entrypoint package, run as a folder: `python3 /opt/jervis/jervis_entrypoint` runs its `__main__.py`.
ENTRYPOINT_PATH = "/opt/jervis/jervis_entrypoint"
KB_SERVER_PATH = "/opt/jervis/mcp/kb_server.py"


@pytest.fixture(params=AGENTS)
def dockerfile(request: pytest.FixtureRequest) -> tuple[str, list[Instruction]]:
    path = CONTEXT / request.param / "Dockerfile"
    assert path.is_file(), f"missing {path}"
    return request.param, parse_dockerfile(path.read_text())


def test_parser_handles_continuations_and_comments() -> None:
    parsed = parse_dockerfile("# syntax=docker/dockerfile:1\nFROM a:1\nRUN x \\\n  # note\n  && y\nUSER 1000\n")
    expected = [("FROM", "a:1", 2), ("RUN", "x && y", 3), ("USER", "1000", 6)]
    assert [(i.keyword, i.args, i.line) for i in parsed] == expected
    assert env_pairs('A=1 B="x y"') == {"A": "1", "B": "x y"} and env_pairs("A 1") == {"A": "1"}
    assert image_is_pinned("python:3.11-slim") and image_is_pinned("r:5000/x@sha256:ab")
    assert not image_is_pinned("python") and not image_is_pinned("node:latest") and not image_is_pinned("r:5000/x")


def test_instructions_are_valid(dockerfile: tuple[str, list[Instruction]]) -> None:
    _, instructions = dockerfile
    assert instructions and instructions[0].keyword in ("FROM", "ARG")
    assert {i.keyword for i in instructions} <= KEYWORDS


def test_base_images_are_pinned(dockerfile: tuple[str, list[Instruction]]) -> None:
    _, instructions = dockerfile
    images = [i.args.split()[0] for i in instructions if i.keyword == "FROM"]
    assert images and all(image_is_pinned(image) for image in images), images


def test_runs_as_non_root_with_the_shared_entrypoint(dockerfile: tuple[str, list[Instruction]]) -> None:
    agent, instructions = dockerfile
    keywords = [i.keyword for i in instructions]
    assert keywords.count("ENTRYPOINT") == 1
    entrypoint_at = keywords.index("ENTRYPOINT")
    users = [i.args for i in instructions[:entrypoint_at] if i.keyword == "USER"]
    assert users and users[-1] == "1000:1000", "a numeric non-root user, so runAsNonRoot can verify it"
    assert exec_form(instructions[entrypoint_at].args) == ["python3", ENTRYPOINT_PATH]
    copies = {destination: sources for sources, destination in
              (copy_sources(i.args) for i in instructions if i.keyword == "COPY")}
    assert copies.get(ENTRYPOINT_PATH) == ["entrypoint/jervis_entrypoint"]
    assert (CONTEXT / "entrypoint" / "jervis_entrypoint" / "__main__.py").is_file(), "the folder must be runnable"
    assert copies.get(KB_SERVER_PATH) == ["kb_mcp/kb_server.py"]
    env: dict[str, str] = {}
    for instruction in instructions:
        if instruction.keyword == "ENV":
            env |= env_pairs(instruction.args)
    assert env.get("AGENT_TYPE") == agent
    assert env.get("PATH", "").startswith("/opt/jervis/venv/bin:"), "python3 must be the venv with the MCP SDK"
    assert any(i.keyword == "WORKDIR" for i in instructions)


def test_every_copy_source_is_in_the_build_context(dockerfile: tuple[str, list[Instruction]]) -> None:
    _, instructions = dockerfile
    for instruction in instructions:
        if instruction.keyword in ("COPY", "ADD") and "--from=" not in instruction.args:
            sources, _ = copy_sources(instruction.args)
            for source in sources:
                assert (CONTEXT / source).exists(), f"line {instruction.line}: {source} not in {CONTEXT}"


def test_git_is_installed_and_the_volume_is_a_safe_directory(dockerfile: tuple[str, list[Instruction]]) -> None:
    _, instructions = dockerfile
    runs = " ".join(i.args for i in instructions if i.keyword == "RUN")
    assert re.search(r"apt-get install [^&]*\bgit\b", runs)
    assert "git config --system --add safe.directory '*'" in runs


def test_the_kb_server_path_matches_the_orchestrators_mcp_config() -> None:
    """`.claude/mcp.json` (written by app/agents/workspace.py) starts the server at this path."""
    source = (REPO_ROOT / "app" / "agents" / "workspace.py").read_text()
    assert f'"{KB_SERVER_PATH}"' in source
    assert (CONTEXT / "kb_mcp" / "requirements.txt").read_text().split() == ["mcp==2.3.0"]


def test_the_openhands_image_runs_the_sdk_with_the_local_runners_pins_and_runner() -> None:
    """The SDK's pins are the local runner's (`OPENHANDS_SPECS`); the runner script lands beside the
    entrypoint (where `openhands_argv` looks) and OPENHANDS_PYTHON is the venv the SDK went into, on
    a Python of 3.12 or later."""
    instructions = parse_dockerfile((CONTEXT / "openhands" / "Dockerfile").read_text())
    args = dict(arg.split("=", 1) for arg in (i.args for i in instructions if i.keyword == "ARG"))
    pins = {"openhands-sdk": args["OPENHANDS_SDK_VERSION"], "openhands-tools": args["OPENHANDS_TOOLS_VERSION"]}
    assert [f"{name}=={version}" for name, version in pins.items()] == list(OPENHANDS_SPECS)
    runs = " ".join(i.args for i in instructions if i.keyword == "RUN")
    assert 'pip install "openhands-sdk==${OPENHANDS_SDK_VERSION}" "openhands-tools==${OPENHANDS_TOOLS_VERSION}"' in runs
    assert "python3 -m venv /opt/openhands" in runs and "pip install \"openhands==" not in runs  # not the CLI
    copies = {destination: sources for sources, destination in
              (copy_sources(i.args) for i in instructions if i.keyword == "COPY")}
    runner = ENTRYPOINT_PATH.rsplit("/", 1)[0] + "/openhands_agent.py"
    assert copies.get(runner) == ["entrypoint/openhands_agent.py"]
    env: dict[str, str] = {}
    for instruction in instructions:
        if instruction.keyword == "ENV":
            env |= env_pairs(instruction.args)
    assert env["OPENHANDS_PYTHON"] == "/opt/openhands/bin/python"
    base = re.fullmatch(r"python:(\d+)\.(\d+)-slim-bookworm", instructions[0].args)
    assert base is not None and (int(base.group(1)), int(base.group(2))) >= (3, 12)
