"""OpenHands' command line: its SDK through the runner script beside the package, not its CLI."""

from __future__ import annotations

import os
from pathlib import Path

from ..common import JERVIS_DIR
from ..config import Config, Step

#: The OpenHands step runner (SDK), beside the `jervis_entrypoint` package in the images and in the
#: repository (this file is `<that folder>/jervis_entrypoint/agents/openhands.py`).
OPENHANDS_RUNNER = Path(__file__).resolve().parents[2] / "openhands_agent.py"


def openhands_argv(config: Config, step: Step, in_git: bool) -> list[str]:
    """OpenHands' agent through its SDK: `openhands_agent.py` (beside the package) run by the Python of
    the OpenHands virtualenv (`OPENHANDS_PYTHON`; 3.12 or later), task from the file, LLM from the
    LLM_* variables. Not the `openhands` CLI: it needs `security_risk` in every tool call (a small
    model leaves it out, nothing is written and it still exits 0), tries a git clone and an update
    check at start, and its exit code does not say whether the agent finished."""
    python = os.environ.get("OPENHANDS_PYTHON", "").strip() or "python3"
    return [python, str(OPENHANDS_RUNNER), f"{JERVIS_DIR}/instructions.md"]
