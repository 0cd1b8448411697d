"""Splitting a transcript into LLM calls that fit the GPU (spec §17.2).

A chunk holds at most `chunk_size` segments (20 by default); a chunk whose prompt would not
leave `OUTPUT_BUDGET` tokens free in the GPU context (`GPU_CTX_CAP`), or whose answer would
not fit `OUTPUT_BUDGET`, is halved until it does (a single segment is never split).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

CHUNK_SIZE = 20
OUTPUT_BUDGET = 8192
GPU_CTX_CAP = 49152
#: A conservative characters-per-token ratio (Czech text tokenises worse than English).
CHARS_PER_TOKEN = 3

T = TypeVar("T")


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def plan_chunks(
    items: Sequence[T],
    chunk_size: int,
    *,
    prompt_tokens: Callable[[Sequence[T]], int],
    output_tokens: Callable[[Sequence[T]], int] = lambda _: 0,
    context_cap: int = GPU_CTX_CAP,
    output_budget: int = OUTPUT_BUDGET,
) -> list[list[T]]:
    """Consecutive chunks of at most `chunk_size` items, each fitting the budgets if it can."""
    prompt_limit = max(1, context_cap - output_budget)

    def fits(chunk: Sequence[T]) -> bool:
        return prompt_tokens(chunk) <= prompt_limit and output_tokens(chunk) <= output_budget

    def split(chunk: list[T]) -> list[list[T]]:
        if len(chunk) <= 1 or fits(chunk):
            return [chunk]
        middle = len(chunk) // 2
        return split(chunk[:middle]) + split(chunk[middle:])

    size = max(1, chunk_size)
    chunks: list[list[T]] = []
    for start in range(0, len(items), size):
        chunks.extend(split(list(items[start:start + size])))
    return chunks
