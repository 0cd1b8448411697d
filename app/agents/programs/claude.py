"""The local Claude Code as a `LocalProgram`: installed from npm into its own prefix, on Anthropic
with a key, else on the local model through the service's own `/v1/messages`.

Two routes, chosen by the settings:

- `ANTHROPIC_API_KEY` set: Claude Code talks to Anthropic (`ANTHROPIC_API_BASE` when set) with
  `AGENT_MODELS["claude"]`. The key reaches it as the agent secret it already is
  (`AGENT_SECRET_KEYS`, app/agents/agent_env.py), never through these variables, and only in a
  run that allows Anthropic: in any other run the step takes the local route below.
- no key: Claude Code talks to the local model through the service itself (`ANTHROPIC_BASE_URL` =
  the service's loopback URL; app/api/routes/messages.py, app/llm/local_messages.py), which
  translates each request onto the local tier (the embedded model or Ollama). With `API_TOKEN`
  set, the key it sends is derived from the token (`agent_key`): enough for `/v1/messages`,
  nothing else, and never the token itself.

Either way no other traffic: no telemetry, error reports or update checks (measured: with
these variables Claude Code 2.1.197 connects to its API base only). npm installs the pinned
version (about 235 MB with its native binary, seconds from a warm npm cache) into
`CLAUDE_CODE_DIR`; a marker naming the pin marks a finished install. The agent image installs the
same pin (agent-images/claude/Dockerfile; a test holds the two together).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from app.agents.programs import AgentInstallError, Log, resolve
from app.config import Settings
from app.llm.anthropic_messages import agent_key
from app.runtime.installs import is_marked, locked, mark, run_logged
from app.runtime.listen import ANY_ADDRESS

CLAUDE_CODE_VERSION = "2.1.197"
CLAUDE_CODE_SPEC = f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}"
#: Claude Code's `engines` (its postinstall script picks the native binary with node).
MIN_NODE = (18, 0)
PROBE_TIMEOUT = 30.0
INSTALL_HINT = "install Node.js 18 or later with npm (Debian: `apt-get install nodejs npm`)"
#: What keeps Claude Code to its API base: no telemetry, error reports, update checks or other
#: "nonessential" calls.
NO_TRAFFIC = {"DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
              "DISABLE_ERROR_REPORTING": "1"}
#: Claude Code's own limit of one API request (`API_TIMEOUT_MS`).
DEFAULT_REQUEST_TIMEOUT_MS = 600_000


def service_url(settings: Settings) -> str:
    """The service's own base URL as a local agent reaches it (`HOST`, `PORT`; loopback for any-address)."""
    host = "127.0.0.1" if settings.host in ANY_ADDRESS else settings.host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{settings.port}"


class ClaudeCodeProgram:
    name = "claude"

    def __init__(self, settings: Settings, *, environ: Mapping[str, str] | None = None) -> None:
        self._settings = settings
        self._environ = os.environ if environ is None else environ
        self.prefix = resolve(settings.claude_code_dir)

    @property
    def bin_dir(self) -> Path:
        return self.prefix / "node_modules" / ".bin"

    def installed(self) -> bool:
        return (self.bin_dir / "claude").is_file() and is_marked(self.prefix, CLAUDE_CODE_SPEC)

    def install(self, log: Log) -> None:
        try:
            self._install(log)
        except OSError as exc:  # an unwritable cache, a full disk
            raise AgentInstallError(f"installing {CLAUDE_CODE_SPEC} into {self.prefix}: {exc}") from exc

    def env(self) -> dict[str, str]:
        env = {"AGENT_TYPE": "claude", **NO_TRAFFIC,
               "PATH": f"{self.bin_dir}{os.pathsep}{self._environ.get('PATH', '')}"}
        settings = self._settings
        if self.on_anthropic():
            env["AGENT_MODEL"] = settings.agent_models.get("claude", "")
            if settings.anthropic_api_base:
                env["ANTHROPIC_BASE_URL"] = settings.anthropic_api_base
            return env
        return env | self.local_route()

    def local_route(self) -> dict[str, str]:
        """The variables of the route to the local model through the service's `/v1/messages`: also
        taken where a key is configured but the run does not allow Anthropic (app/agents/agent_env.py)."""
        settings = self._settings
        token = settings.api_token.get_secret_value() if settings.api_token is not None else None
        # The model name only labels the session (the service answers with the local tier whatever
        # is asked); Claude Code's background calls use its small model, so that one is named too.
        model = self.local_model()
        return {"AGENT_MODEL": model, "ANTHROPIC_DEFAULT_HAIKU_MODEL": model, "ANTHROPIC_SMALL_FAST_MODEL": model,
                "ANTHROPIC_BASE_URL": service_url(settings),
                "ANTHROPIC_API_KEY": agent_key(token) if token else "local",
                "API_TIMEOUT_MS": str(self.request_timeout_ms())}

    def request_timeout_ms(self) -> int:
        """How long Claude Code lets one request take on the local route: its 10 minutes by default,
        which a busy local model exceeds (measured: a turn queued behind another client's 7,765-token
        prompt was abandoned at 10 minutes and sent again); the whole step's time instead."""
        return max(DEFAULT_REQUEST_TIMEOUT_MS, int(self._settings.agent_timeouts.get("claude", 0) * 1000))

    def describe(self) -> str:
        state = "installed" if self.installed() else "installed on first use"
        if self.on_anthropic():
            where = self._settings.anthropic_api_base or "the Anthropic API"
            route = f"on {where} with {self._settings.agent_models.get('claude') or 'its default model'}"
        else:
            route = f"on the local model {self.local_model()} through the service's /v1/messages"
        return f"claude ({CLAUDE_CODE_SPEC}, {route}; {state} in {self.prefix})"

    def on_anthropic(self) -> bool:
        """An Anthropic key is configured: Claude Code talks to Anthropic, not to the local model."""
        key = self._settings.anthropic_api_key
        return key is not None and bool(key.get_secret_value())

    def local_model(self) -> str:
        settings = self._settings
        return settings.local_llm_model if settings.local_llm_api_base else f"ollama_chat/{settings.local_model}"

    # ------------------------------------------------------------------ install
    def check_node(self) -> tuple[str, str]:
        """npm and node on PATH, node recent enough; raises AgentInstallError saying what to install."""
        search = self._environ.get("PATH", "")
        npm, node = shutil.which("npm", path=search), shutil.which("node", path=search)
        if npm is None or node is None:
            missing = " and ".join(name for name, found in (("node", node), ("npm", npm)) if found is None)
            raise AgentInstallError(f"Claude Code cannot be installed: {missing} not found on PATH; {INSTALL_HINT}")
        try:
            done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AgentInstallError(f"Claude Code cannot be installed: {node} --version failed: {exc}") from exc
        version = re.match(r"v?(\d+)\.(\d+)", done.stdout.strip())
        if done.returncode != 0 or version is None:
            raise AgentInstallError(f"Claude Code cannot be installed: {node} --version gave "
                                    f"{(done.stdout + done.stderr).strip()[:200]!r}; {INSTALL_HINT}")
        if (int(version.group(1)), int(version.group(2))) < MIN_NODE:
            raise AgentInstallError(f"Claude Code needs Node.js {'.'.join(map(str, MIN_NODE))} or later, "
                                    f"{node} is {done.stdout.strip()}; {INSTALL_HINT}")
        return npm, node

    def _install(self, log: Log) -> None:
        prefix = self.prefix
        npm, _ = self.check_node()
        with locked(prefix.parent):
            if self.installed():  # another launcher finished it while we waited
                return
            log(f"claude: installing {CLAUDE_CODE_SPEC} into {prefix} (once; about 235 MB, seconds to minutes) …")
            started = time.monotonic()
            if prefix.exists():
                shutil.rmtree(prefix)
            prefix.mkdir(parents=True)
            run_logged([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save",
                        "--no-update-notifier", CLAUDE_CODE_SPEC],
                       prefix.parent / f"{prefix.name}-install.log", what=f"npm install {CLAUDE_CODE_SPEC}",
                       error=AgentInstallError, env={**self._environ, **NO_TRAFFIC})
            self._check_version()
            mark(prefix, CLAUDE_CODE_SPEC)
            log(f"claude: {CLAUDE_CODE_SPEC} installed in {time.monotonic() - started:.0f} s")

    def _check_version(self) -> None:
        """`claude --version` must run and name the pinned version (a broken install is not marked done)."""
        try:
            done = subprocess.run([str(self.bin_dir / "claude"), "--version"], capture_output=True, text=True,
                                  timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL,
                                  env={**self._environ, **NO_TRAFFIC})
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AgentInstallError(f"claude --version did not run after the install: {exc}") from exc
        if done.returncode != 0 or CLAUDE_CODE_VERSION not in done.stdout:
            raise AgentInstallError(f"claude --version after the install gave exit {done.returncode}: "
                                    f"{(done.stdout + done.stderr)[-500:]}")
