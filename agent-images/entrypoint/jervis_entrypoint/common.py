"""What every part of the entrypoint shares: the hand-over folder's names, the exception that
means exit 2, the log line, and lenient readers of the JSON that the orchestrator and agents write."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

JERVIS_DIR = ".jervis"
RESULT_FILE = "result.json"
SUMMARY_LIMIT = 4000


class BadEnvironment(Exception):
    """The entrypoint itself cannot run (missing or invalid input): exit 2."""


def log(message: str) -> None:
    """Entrypoint messages go to the same stream as the agent's (the Job's log)."""
    print(f"[jervis-entrypoint] {message}", flush=True)


def read_json_object(path: Path, *, required: bool) -> dict[str, Any]:
    """A JSON object from a hand-over file; a missing optional file is an empty object."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        if required:
            raise BadEnvironment(f"{path.name} is missing") from exc
        return {}
    except (OSError, ValueError) as exc:
        raise BadEnvironment(f"cannot read {path.name}: {exc}") from exc
    if not isinstance(value, dict):
        raise BadEnvironment(f"{path.name} must hold a JSON object")
    return value


def text_field(mapping: Mapping[str, Any], key: str) -> str:
    """A string field of agent-written JSON ("" if absent or not a string: agents are untrusted)."""
    value = mapping.get(key)
    return value if isinstance(value, str) else ""


def string_list(value: Any) -> list[str]:
    """The strings of a JSON list (anything else is ignored: hand-over files are advisory here)."""
    return [item for item in value if isinstance(item, str) and item] if isinstance(value, list) else []
