"""What the embedded model's downloader, installer and server share: where their files are cached,
the error they raise and how they report progress."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
#: The model, the llama-cpp-python wheel and the install logs: built or fetched once, reused.
DEFAULT_CACHE_DIR = PROJECT_ROOT / ".cache" / "llm"

#: A progress line for the terminal (the first run takes minutes; silence would look like a hang).
Log = Callable[[str], None]


def print_line(message: str) -> None:
    print(message, flush=True)


class EmbeddedModelError(RuntimeError):
    """The embedded model could not be installed, verified, started or reached."""
