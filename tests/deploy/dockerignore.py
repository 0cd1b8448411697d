"""`.dockerignore` matching as Docker's build context does it (moby/patternmatcher).

Patterns are cleaned paths relative to the context root; `*` and `?` stay within one path
segment, `**` spans any number of segments; a pattern that matches a directory excludes all of
it; `!pattern` re-includes; the last matching pattern decides.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pattern:
    text: str
    negated: bool
    regex: re.Pattern[str]


def _regex(pattern: str) -> re.Pattern[str]:
    out, i = "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            if pattern[i + 1:i + 2] == "*":
                i += 1
                if pattern[i + 1:i + 2] == "/":
                    i += 1
                out += ".*" if i + 1 == len(pattern) else "(.*/)?"
            else:
                out += "[^/]*"
        elif ch == "?":
            out += "[^/]"
        elif ch == "[":
            end = pattern.index("]", i)
            out += pattern[i:end + 1]
            i = end
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out += re.escape(pattern[i])
        else:
            out += re.escape(ch)
        i += 1
    return re.compile(f"^{out}$")


def parse(text: str) -> list[Pattern]:
    patterns = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        body = posixpath.normpath(line[1:].strip() if negated else line).lstrip("/")
        patterns.append(Pattern(line, negated, _regex(body)))
    return patterns


def excluded(path: str, patterns: list[Pattern]) -> bool:
    """Whether `path` (relative to the context root, `/`-separated) stays out of the context."""
    parts = posixpath.normpath(path).split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    result = False
    for pattern in patterns:
        if any(pattern.regex.match(prefix) for prefix in prefixes):
            result = not pattern.negated
    return result


def context_files(root: Path, source: str, patterns: list[Pattern]) -> tuple[list[str], list[str]]:
    """(included, excluded) files below `source` (a file or a directory of the context)."""
    base = root / source
    files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
    included, dropped = [], []
    for file in files:
        rel = file.relative_to(root).as_posix()
        (dropped if excluded(rel, patterns) else included).append(rel)
    return included, dropped
