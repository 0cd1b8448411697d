"""Text cut to a length, marked where it was cut: the one way every module shortens a text for a
prompt, a push, a report or a terminal."""

from __future__ import annotations


def clip(text: str, limit: int, *, one_line: bool = False) -> str:
    """At most `limit` characters, ending in "…" when cut (trailing whitespace before it dropped);
    `one_line` first folds every run of whitespace, newlines included, into one space."""
    if one_line:
        text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + "…"
