"""The service started the ways people start it: the image's command and the development launcher.

`LAUNCHERS` are the two commands: the Dockerfile's CMD (read from the Dockerfile, so the test runs
what the image runs; it must take its address from `HOST` / `PORT`, since a fixed `--host` or
`--port` could not be pointed at a free test port) and `python -m app.dev` (`scripts/run.sh`).
`Launched` runs one on a free port with the fake servers of tests/fixtures/ and stops it after use:
a test never leaves anything listening.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.service import ROOT, service_env
from tests.support import free_port

DOCKERFILE = ROOT / "Dockerfile"
#: What the launched process must not inherit from the developer's shell.
SCRUBBED = ("API_TOKEN", "ALLOW_NO_TOKEN", "ALLOWED_HOSTS", "TRUSTED_PROXIES", "FORWARDED_ALLOW_IPS", "HOST", "PORT")


def image_command() -> list[str]:
    """The Dockerfile's CMD as this interpreter runs it."""
    [line] = [line for line in DOCKERFILE.read_text().splitlines() if line.startswith("CMD ")]
    argv: list[str] = json.loads(line.removeprefix("CMD "))
    assert not {"--host", "--port"} & set(argv), f"the image's CMD fixes its address: {argv}"
    return [sys.executable if argv[0] == "python" else argv[0], *argv[1:]]


def dev_command() -> list[str]:
    return [sys.executable, "-m", "app.dev"]


LAUNCHERS = {"image": image_command, "dev": dev_command}


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class Launched:
    """One launch of the service on a free port; `stop()` ends it (and is safe to call twice)."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.port = int(env["PORT"])
        self.log = log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_listening_or_exit(self, timeout: float = 90.0) -> int | None:
        """The exit status when it ended first, None once its port answers HTTP."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (code := self.proc.poll()) is not None:
                return code
            if accepts(self.port):
                try:
                    httpx.get(f"{self.url}/health/live", timeout=2.0)
                    return None
                except httpx.HTTPError:
                    pass
            time.sleep(0.1)
        raise AssertionError(f"neither listening nor ended after {timeout} s:\n{self.output()[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        assert not accepts(self.port), "the launch left its port listening"


def launch_env(servers: tuple[Any, Any, Any, Any], data_root: Path, home: Path, **settings: str) -> dict[str, str]:
    """The environment of a launch: the fake servers, a free PORT, the given settings, nothing else
    of the caller's listen settings; no embedded model (the scripted LLM answers as Ollama)."""
    mongo, llm, kotlin, kb = servers
    env = {key: value for key, value in os.environ.items() if key not in SCRUBBED}
    env |= service_env(mongo_url=mongo.url, llm_url=llm.url, kotlin_url=kotlin.url, kb_url=kb.url, data_root=data_root)
    env |= {"PORT": str(free_port()), "JERVIS_EMBEDDED_LLM": "0", "JERVIS_DEV_HOME": str(home), "LOG_FORMAT": "text"}
    env |= {key.upper(): value for key, value in settings.items()}
    return env


@pytest.fixture
def launch(mongo_server: Any, llm_server: Any, kotlin_server: Any, kb_server: Any, data_root: Path,
           tmp_path: Path) -> Iterator[Callable[..., Launched]]:
    """`launch("image" | "dev", **settings)`: a started launch; every one is stopped after the test."""
    started: list[Launched] = []

    def start(launcher: str, **settings: str) -> Launched:
        env = launch_env((mongo_server, llm_server, kotlin_server, kb_server), data_root,
                         tmp_path / f"home-{len(started)}", **settings)
        launched = Launched(LAUNCHERS[launcher](), env, tmp_path / f"launch-{len(started)}.log")
        started.append(launched)
        return launched

    yield start
    for launched in started:
        launched.stop()
