"""The local OpenHands as a `LocalProgram`: the OpenHands SDK in its own virtualenv, driven by the
entrypoint's runner script (`agent-images/entrypoint/openhands_agent.py`), on the local LLM.

The SDK (`openhands-sdk` + `openhands-tools`), not the `openhands` CLI: the CLI needs `security_risk`
in every tool call (a small model leaves it out; nothing is written and it still exits 0), clones
its extensions and checks PyPI at every start, and says nothing about the outcome in its exit code.
The SDK runs the same agent from a short script that chooses its tools (terminal and file editor),
bounds its steps, reaches nothing but the model and reports the tokens and the outcome.

OpenHands needs Python 3.12 or later; the service runs on 3.11, so the virtualenv is made with
another interpreter: `OPENHANDS_PYTHON`, else the first of `python3.12` / `python3.13` on PATH or in
pyenv's versions that really runs (a pyenv shim for a version that is not selected does not).
The first use pays a one-time `pip install` (about 660 MB, 2-4 minutes; 100 s with a warm pip
cache, measured), with progress lines; a marker naming the pins marks a finished install. The
agent image installs the same pins (agent-images/openhands/Dockerfile).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from app.agents.programs import AgentInstallError, Log, resolve
from app.config import Settings
from app.runtime.installs import is_marked, locked, mark, pip_progress, run_logged

OPENHANDS_SPECS = ("openhands-sdk==1.58.2", "openhands-tools==1.58.2")
#: What the marker file holds (and `describe()` shows).
OPENHANDS_SPEC = " ".join(OPENHANDS_SPECS)
MIN_PYTHON = (3, 12)
#: Interpreters looked for, in this order (3.12 is the version OpenHands was measured with here).
PYTHON_NAMES = ("python3.12", "python3.13", "python3.14")
PROBE_TIMEOUT = 30.0
#: Prints the interpreter's version and fails unless it can make a virtualenv.
PYTHON_PROBE = "import sys, venv, ensurepip; print('%d.%d' % sys.version_info[:2])"
INSTALL_HINT = ("install one (Debian: `apt-get install python3.12 python3.12-venv`; or `pyenv install 3.12`) "
                "or set OPENHANDS_PYTHON to its path")


class OpenHandsProgram:
    name = "openhands"

    def __init__(self, settings: Settings, *, environ: Mapping[str, str] | None = None) -> None:
        self._settings = settings
        self._environ = os.environ if environ is None else environ
        self.venv = resolve(settings.openhands_venv)

    @property
    def python(self) -> Path:
        """The virtualenv's interpreter: what the entrypoint runs the runner script with."""
        return self.venv / "bin" / "python"

    def installed(self) -> bool:
        return self.python.is_file() and is_marked(self.venv, OPENHANDS_SPEC)

    def install(self, log: Log) -> None:
        try:
            self._install(log)
        except OSError as exc:  # an unwritable cache, a full disk
            raise AgentInstallError(f"installing {OPENHANDS_SPEC} into {self.venv}: {exc}") from exc

    def env(self) -> dict[str, str]:
        model, base_url, native = self.model()
        env = {"AGENT_TYPE": "openhands", "AGENT_MODEL": model, "OPENHANDS_PYTHON": str(self.python),
               "LLM_MODEL": model, "LLM_BASE_URL": base_url, "LLM_API_KEY": "local",
               "LLM_NATIVE_TOOL_CALLING": "true" if native else "false"}
        if not native:  # llama-cpp-python's server refuses message contents given as lists of parts (500)
            env["LLM_FORCE_STRING_SERIALIZER"] = "true"
        return env

    def describe(self) -> str:
        model, _, native = self.model()
        state = "installed" if self.installed() else "installed on first use"
        calls = "native tool calls" if native else "tool calls as text"
        return f"openhands ({OPENHANDS_SPEC}, model {model}, {calls}; {state} in {self.venv})"

    def model(self) -> tuple[str, str, bool]:
        """The local LLM for OpenHands (model, base URL, native tool calls).

        The OpenAI-compatible local server (the embedded model) when configured: llama-cpp-python's
        server returns `tool_calls` only when one function is forced, and OpenHands lets the model
        choose, so its tool calls come back as text; OpenHands then describes the tools in the
        prompt and reads `<function=…>` calls from the answer (measured: with native tool calls the
        server refuses OpenHands' first request outright, its system message being a list of
        parts). Else Ollama's chat API with the local tiers' model, whose tool models answer with
        native `tool_calls`."""
        settings = self._settings
        if settings.local_llm_api_base:
            return settings.local_llm_model, settings.local_llm_api_base, False
        return f"ollama_chat/{settings.local_model}", settings.ollama_url, True

    # ------------------------------------------------------------------ install
    def find_python(self) -> Path:
        """The interpreter the virtualenv is made with (see the module's docstring). Raises
        AgentInstallError naming what was tried and what to install."""
        configured = self._settings.openhands_python
        if configured:
            found = _probe(configured)
            if found is None:
                raise AgentInstallError(f"OPENHANDS_PYTHON={configured} is not a Python of "
                                        f"{_version(MIN_PYTHON)} or later that can make a virtualenv; {INSTALL_HINT}")
            return found
        tried: list[str] = []
        for candidate in self._candidates():
            tried.append(str(candidate))
            found = _probe(str(candidate))
            if found is not None:
                return found
        raise AgentInstallError(
            f"OpenHands needs Python {_version(MIN_PYTHON)} or later and none was found"
            f" (tried {', '.join(tried) if tried else 'PATH and pyenv: nothing'}); {INSTALL_HINT}")

    def _candidates(self) -> Iterator[Path]:
        """`python3.12`, `python3.13`, … on PATH, then pyenv's versions (newest patch first)."""
        search = self._environ.get("PATH", "")
        for name in PYTHON_NAMES:
            found = shutil.which(name, path=search)
            if found:
                yield Path(found)
        root = self._environ.get("PYENV_ROOT") or (str(Path(self._environ["HOME"]) / ".pyenv")
                                                   if self._environ.get("HOME") else "")
        versions = Path(root) / "versions" if root else None
        if versions is None or not versions.is_dir():
            return
        numbered = [(tuple(int(part) for part in match.groups()), path) for path in versions.iterdir()
                    if (match := re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", path.name))]
        for version, path in sorted(numbered, key=lambda item: (item[0][:2], [-n for n in item[0][2:]])):
            if version[:2] >= MIN_PYTHON:
                yield path / "bin" / f"python{version[0]}.{version[1]}"

    def _install(self, log: Log) -> None:
        venv = self.venv
        with locked(venv.parent):
            if self.installed():  # another launcher finished it while we waited
                return
            python = self.find_python()
            log(f"openhands: installing {OPENHANDS_SPEC} into {venv} with {python} "
                "(once; about 660 MB, 2-4 minutes) …")
            started = time.monotonic()
            if venv.exists():
                shutil.rmtree(venv)
            install_log = venv.parent / f"{venv.name}-install.log"
            run_logged([str(python), "-m", "venv", str(venv)], install_log,
                       what=f"creating the virtualenv {venv}", error=AgentInstallError)
            run_logged([str(self.python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                        "--progress-bar", "off", *OPENHANDS_SPECS],
                       install_log, what=f"pip install {OPENHANDS_SPEC}", error=AgentInstallError,
                       on_line=pip_progress(log, started, name="openhands", every=50))
            self._check_import()
            mark(venv, OPENHANDS_SPEC)
            log(f"openhands: {OPENHANDS_SPEC} installed in {time.monotonic() - started:.0f} s")

    def _check_import(self) -> None:
        """The SDK and its tools must import, at the pinned version (a broken install is not marked done)."""
        wanted = OPENHANDS_SPECS[0].partition("==")[2]
        script = ("import importlib.metadata as m, openhands.sdk, openhands.tools.terminal, "
                  "openhands.tools.file_editor; print(m.version('openhands-sdk'))")
        try:
            done = subprocess.run([str(self.python), "-c", script], capture_output=True, text=True, timeout=180,
                                  stdin=subprocess.DEVNULL, env={**os.environ, "OPENHANDS_SUPPRESS_BANNER": "1",
                                                                 "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AgentInstallError(f"the OpenHands SDK did not import after the install: {exc}") from exc
        if done.returncode != 0 or done.stdout.strip().splitlines()[-1:] != [wanted]:
            raise AgentInstallError(f"importing the OpenHands SDK after the install gave exit {done.returncode}: "
                                    f"{(done.stdout + done.stderr)[-500:]}")


def _probe(python: str) -> Path | None:
    """`python` when it runs, is recent enough and can make a virtualenv; else None."""
    try:
        done = subprocess.run([python, "-c", PYTHON_PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = re.fullmatch(r"(\d+)\.(\d+)", done.stdout.strip())
    if done.returncode != 0 or version is None:
        return None
    return Path(python) if (int(version.group(1)), int(version.group(2))) >= MIN_PYTHON else None


def _version(version: tuple[int, int]) -> str:
    return ".".join(map(str, version))
