"""Checkpoint serializer that redacts every string before it is written to MongoDB.

A checkpoint holds the whole graph state and the pending interrupts: step summaries, failure
texts quoting an agent's log or a provider's error, the questions put to the user. Redacting at
the serializer is the one place every one of them passes, whichever node wrote it. Reading is
unchanged: what was stored is what comes back (masked values stay masked after a resume).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Interrupt


def redact_tree(value: Any, redact: Callable[[str], str]) -> Any:
    """Every string in plain dicts, lists and tuples redacted (what the serializer writes of them)."""
    return RedactingSerializer(redact).clean(value)


class RedactingSerializer(SerializerProtocol):
    def __init__(self, redact: Callable[[str], str], inner: SerializerProtocol | None = None) -> None:
        self._redact = redact
        self._inner = inner or JsonPlusSerializer()

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self._inner.dumps_typed(self.clean(obj))

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return self._inner.loads_typed(data)

    def clean(self, value: Any) -> Any:
        """Strings in plain dicts, lists, tuples and interrupt values; other objects (and their
        subclasses) pass unchanged, so the inner serializer sees the types it knows."""
        kind = type(value)
        if kind is str:
            return self._redact(value)
        if kind is dict:
            return {key: self.clean(item) for key, item in value.items()}
        if kind is list:
            return [self.clean(item) for item in value]
        if kind is tuple:
            return tuple(self.clean(item) for item in value)
        if isinstance(value, Interrupt):
            cleaned = copy.copy(value)
            cleaned.value = self.clean(value.value)
            return cleaned
        return value
