"""Chunk planning under the GPU budgets (spec §17.2)."""

from __future__ import annotations

from app.correction.chunking import GPU_CTX_CAP, OUTPUT_BUDGET, estimate_tokens, plan_chunks


def test_estimate_is_chars_over_three_rounded_up() -> None:
    assert estimate_tokens("") == 0 and estimate_tokens("abc") == 1 and estimate_tokens("abcd") == 2


def test_default_chunks_are_consecutive_and_cover_everything() -> None:
    chunks = plan_chunks(list(range(45)), 20, prompt_tokens=lambda c: 100)
    assert [len(c) for c in chunks] == [20, 20, 5]
    assert [i for c in chunks for i in c] == list(range(45))


def test_chunk_whose_prompt_passes_the_cap_is_split_until_it_fits() -> None:
    per_item = 5_000  # 20 items = 100k tokens; the prompt may use GPU_CTX_CAP - OUTPUT_BUDGET = 40960
    chunks = plan_chunks(list(range(20)), 20, prompt_tokens=lambda c: 500 + per_item * len(c))
    assert all(500 + per_item * len(c) <= GPU_CTX_CAP - OUTPUT_BUDGET for c in chunks)
    assert len(chunks) > 2 and [i for c in chunks for i in c] == list(range(20))


def test_chunk_whose_answer_would_pass_the_output_budget_is_split() -> None:
    chunks = plan_chunks(list(range(20)), 20, prompt_tokens=lambda c: 10, output_tokens=lambda c: 1_000 * len(c))
    assert all(1_000 * len(c) <= OUTPUT_BUDGET for c in chunks)
    assert [i for c in chunks for i in c] == list(range(20))


def test_a_single_oversized_segment_is_still_sent_alone() -> None:
    chunks = plan_chunks(["a", "b", "c"], 20, prompt_tokens=lambda c: 10 if c == ["b"] or len(c) == 0 else
                         10**6 if "a" in c else 10)
    assert ["a"] in chunks and [i for c in chunks for i in c] == ["a", "b", "c"]


def test_small_custom_cap() -> None:
    chunks = plan_chunks(list(range(8)), 8, prompt_tokens=lambda c: 100 * len(c), context_cap=500, output_budget=200)
    assert all(100 * len(c) <= 300 for c in chunks) and sum(len(c) for c in chunks) == 8


def test_empty_input_gives_no_chunks() -> None:
    assert plan_chunks([], 20, prompt_tokens=lambda c: 0) == []
