"""Session fixtures that install the real agents (and the MCP SDK) into `.cache/agents/`.

Each tool gets its own directory there (gitignored) and is reused while its marker file records the
same package spec, so only the first run pays for the download. Progress and timings are printed
(`pytest -s` shows them live). A failed install fails the test with the installer's output: a
missing tool is never a silent skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.agents.aider_install import AiderInstallError, ensure_aider
from app.agents.programs import AgentInstallError
from app.agents.programs.claude import ClaudeCodeProgram
from app.config import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE = REPO_ROOT / ".cache" / "agents"
#: The entrypoint package, run as a folder (`python3 <ENTRYPOINT>`) the way the images and the local runner run it.
ENTRYPOINT = REPO_ROOT / "agent-images" / "entrypoint" / "jervis_entrypoint"
KB_MCP_SERVER = REPO_ROOT / "agent-images" / "kb_mcp" / "kb_server.py"

# Same pins as the Dockerfiles (agent-images/*/Dockerfile); Aider's and Claude Code's are the service's
# own (AIDER_SPEC, CLAUDE_CODE_SPEC), installed by the service's installers.
MCP_SPEC = "mcp==2.3.0"
INSTALL_TIMEOUT = 900


def _progress(message: str) -> None:
    print(f"[agent-install] {message}", file=sys.stderr, flush=True)


def _run_install(argv: list[str], what: str) -> None:
    """Run one installer command; on failure fail the test with its whole output."""
    _progress(f"{what}: {' '.join(argv)}")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        output = [part.decode(errors="replace") for part in (exc.stdout, exc.stderr) if part]  # bytes, always
        pytest.fail(f"{what} timed out after {INSTALL_TIMEOUT} s:\n" + "\n".join(output))
    if done.returncode != 0:
        pytest.fail(f"{what} failed (exit {done.returncode}):\n{done.stdout[-8000:]}\n{done.stderr[-8000:]}")


def _cached(target: Path, spec: str, install: Callable[[Path], None]) -> Path:
    """Reuse `target` if its marker names `spec`; otherwise (re)install it from scratch, timed."""
    marker = target / ".jervis-installed"
    if marker.is_file() and marker.read_text(encoding="utf-8").strip() == spec:
        _progress(f"{spec}: reusing {target.relative_to(REPO_ROOT)}")
        return target
    if target.exists():
        shutil.rmtree(target)
    started = time.monotonic()
    install(target)
    marker.write_text(spec + "\n", encoding="utf-8")
    _progress(f"{spec}: installed in {time.monotonic() - started:.1f} s")
    return target


def python_venv(name: str, spec: str) -> Path:
    """A private virtualenv with `spec` installed; returns its bin directory."""

    def install(target: Path) -> None:
        _run_install([sys.executable, "-m", "venv", str(target)], f"create venv {name}")
        _run_install([str(target / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                      "--no-input", spec], f"pip install {spec}")

    return _cached(CACHE / name, spec, install) / "bin"


@pytest.fixture(scope="session")
def aider_bin() -> Path:
    """bin directory of the Aider virtualenv (aider pins its own litellm: never the service's venv),
    installed by the service's own installer, which the local runner uses on first use."""
    try:
        bin_dir = ensure_aider(CACHE / "aider-venv", log=_progress)
    except AiderInstallError as exc:
        pytest.fail(f"installing Aider failed: {exc}")
    assert (bin_dir / "aider").exists(), f"no aider in {bin_dir}"
    return bin_dir


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """node_modules/.bin holding Claude Code's `claude`, installed by the local runner's own
    installer (`ClaudeCodeProgram`) where the runner looks for it (`CLAUDE_CODE_DIR`)."""
    program = ClaudeCodeProgram(Settings(claude_code_dir=str(CACHE / "claude-code")))
    if not program.installed():
        started = time.monotonic()
        try:
            program.install(_progress)
        except AgentInstallError as exc:
            pytest.fail(f"installing Claude Code failed: {exc}")
        _progress(f"Claude Code installed in {time.monotonic() - started:.1f} s")
    assert (program.bin_dir / "claude").exists(), f"no claude in {program.bin_dir}"
    return program.bin_dir


@pytest.fixture(scope="session")
def mcp_python() -> Path:
    """A Python with the official MCP SDK (the KB MCP server's only dependency)."""
    return python_venv("mcp-venv", MCP_SPEC) / "python"


def base_env(**extra: str) -> dict[str, str]:
    """A minimal environment for the entrypoint: no variables of the developer's shell leak in."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return env | extra
