"""What the embedded model's downloader, installer and server share: where their files are cached,
the error they raise and how they report progress."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
#: The model, the llama-cpp-python wheel and the install logs: built or fetched once, reused.
DEFAULT_CACHE_DIR = PROJECT_ROOT / ".cache" / "llm"
#: Pins the llama-cpp-python version: its wheel and the llama-server built from its sdist.
REQUIREMENTS_FILE = PROJECT_ROOT / "requirements-llm.txt"

#: A progress line for the terminal (the first run takes minutes; silence would look like a hang).
Log = Callable[[str], None]


def print_line(message: str) -> None:
    print(message, flush=True)


class EmbeddedModelError(RuntimeError):
    """The embedded model could not be installed, verified, started or reached."""


def pinned_llama_cpp_version(requirements: Path = REQUIREMENTS_FILE) -> str:
    match = re.search(r"^llama-cpp-python(?:\[[^\]]*\])?==([\w.]+)", requirements.read_text(), re.M)
    if not match:
        raise EmbeddedModelError(f"{requirements} pins no llama-cpp-python version")
    return match.group(1)


_NINJA_STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]")


def build_progress(log: Log) -> Callable[[str], None]:
    """A line callback that reports the build's ninja steps every 10 %."""
    started = time.monotonic()
    next_percent = 10

    def on_line(line: str) -> None:
        nonlocal next_percent
        step = _NINJA_STEP.match(line)
        if step:
            percent = int(step.group(1)) * 100 // max(int(step.group(2)), 1)
            if percent >= next_percent:
                next_percent = percent // 10 * 10 + 10
                log(f"llm server: build {percent:3d}% ({time.monotonic() - started:.0f}s)")

    return on_line
