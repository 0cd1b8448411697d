"""A small Dockerfile parser shared by the static image checks (agent images and the orchestrator).

Continuation lines are joined, comment lines dropped (also inside continuations, as Docker does),
exec-form JSON is decoded. Parser directives (`# syntax=`) are comments here. No Docker engine is
needed: the tests check what the Dockerfiles promise without building them.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

KEYWORDS = {"ADD", "ARG", "CMD", "COPY", "ENTRYPOINT", "ENV", "EXPOSE", "FROM", "HEALTHCHECK", "LABEL",
            "MAINTAINER", "ONBUILD", "RUN", "SHELL", "STOPSIGNAL", "USER", "VOLUME", "WORKDIR"}


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    line: int


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with continuations joined; comment lines are dropped, also inside continuations
    (as Docker does). Parser directives (`# syntax=`) are comments here."""
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        keyword, _, args = " ".join(part for part in pending if part).partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip(), start))
        pending = []
    if pending:
        raise ValueError("the Dockerfile ends inside a continuation")
    return instructions


def stages(instructions: list[Instruction]) -> list[list[Instruction]]:
    """The instructions of each build stage, each list starting with its FROM (global ARGs dropped)."""
    result: list[list[Instruction]] = []
    for instruction in instructions:
        if instruction.keyword == "FROM":
            result.append([instruction])
        elif result:
            result[-1].append(instruction)
    return result


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    if not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
        raise ValueError(f"not exec form: {args}")
    return value


def env_pairs(args: str) -> dict[str, str]:
    """`ENV a=1 b="x y"` (and the legacy `ENV a 1`)."""
    words = shlex.split(args)
    if words and "=" not in words[0]:
        return {words[0]: " ".join(words[1:])}
    return dict(word.split("=", 1) for word in words)


def copy_sources(args: str) -> tuple[list[str], str]:
    """Sources and destination of a COPY/ADD, without its --flags (exec form accepted too)."""
    words = exec_form(args) if args.startswith("[") else shlex.split(args)
    words = [word for word in words if not word.startswith("--")]
    return words[:-1], words[-1]


def image_is_pinned(image: str) -> bool:
    """A tag other than `latest`, or a digest (a registry port is not a tag)."""
    if "@sha256:" in image:
        return True
    name = image.rsplit("/", 1)[-1]
    return ":" in name and name.split(":", 1)[1] not in ("", "latest")
