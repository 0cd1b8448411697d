"""The instructions as a command-line argument, for the agents that take them there (Claude Code,
Junie): Linux caps one argument, so long instructions become a pointer to their file."""

from __future__ import annotations

from ..config import Step

#: Past this size the instructions are not put on the command line (Linux caps one argument at 128 KiB).
MAX_PROMPT_ARG = 100_000
FILE_PROMPT = "Read the file .jervis/instructions.md in the current directory and carry out the step it describes."


def prompt_arg(step: Step) -> str:
    """The instructions as one argument, or a pointer to the file when they are too long for argv."""
    return step.instructions if len(step.instructions.encode()) <= MAX_PROMPT_ARG else FILE_PROMPT
