"""Pure parsers of model output: models wrap JSON in fences, prose or both."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class JsonParseError(ValueError):
    """The model's answer holds no JSON object we can read."""


def _balanced_object(text: str) -> str | None:
    """The first balanced `{...}` in text, honouring strings, or None."""
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped = 0, False, False
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
                    return text[start : pos + 1]
        start = text.find("{", start + 1)
    return None


def parse_json_object(text: str) -> dict[str, Any]:
    """Parse a JSON object from bare JSON, a fenced block, or JSON embedded in prose."""
    candidates = [text.strip(), *(m.strip() for m in _FENCE.findall(text))]
    embedded = _balanced_object(text)
    if embedded:
        candidates.append(embedded)
    last_error: Exception | None = None
    for candidate in candidates:
        if not candidate:
            continue
        try:
            value = json.loads(candidate, strict=False)
        except json.JSONDecodeError as exc:
            last_error = exc
            continue
        if isinstance(value, dict):
            return value
        last_error = JsonParseError(f"expected a JSON object, got {type(value).__name__}")
    raise JsonParseError(f"no JSON object in model output: {last_error}")
