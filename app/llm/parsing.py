"""Pure parsers of model output: models wrap JSON in fences, prose or both."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class JsonParseError(ValueError):
    """The model's answer holds no JSON object we can read."""


def _balanced_objects(text: str) -> list[str]:
    """Every balanced `{...}` span in text (outermost, honouring strings), in order."""
    spans: list[str] = []
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped, end = 0, False, False, -1
        for pos in range(start, len(text)):
            char = text[pos]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    end = pos
                    break
        if end == -1:
            break
        spans.append(text[start : end + 1])
        start = text.find("{", start + 1)
    return spans


def _loads(candidate: str) -> Any:
    return json.loads(candidate, strict=False)


def parse_json_object(text: str) -> dict[str, Any]:
    """Parse a JSON object from bare JSON, a fenced block, or JSON embedded in prose.

    Valid JSON that is not an object (say, a list of goals) is an error, not its first element.
    """
    for candidate in (text.strip(), *(m.strip() for m in _FENCE.findall(text))):
        if not candidate:
            continue
        try:
            value = _loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
        raise JsonParseError(f"expected a JSON object, got {type(value).__name__}")
    for candidate in _balanced_objects(text):
        try:
            value = _loads(candidate)
        except json.JSONDecodeError:
            continue  # braces in prose, e.g. "the {goals} list"; try the next span
        if isinstance(value, dict):
            return value
    raise JsonParseError("no JSON object in model output")
