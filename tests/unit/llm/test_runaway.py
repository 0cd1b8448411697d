"""The repetition guard (app/llm/runaway.py): a looping answer is noticed within a few repeats;
ordinary answers, and repetitions the prompt itself holds, are not."""

from __future__ import annotations

import json

from app.llm.runaway import RepetitionGuard, repeating_period, without_repetition

LOOP = "Add the function to calc.py. "


def feed(guard: RepetitionGuard, text: str, piece: int = 7) -> int | None:
    """Characters fed when the guard tripped (None: it never did)."""
    for start in range(0, len(text), piece):
        if guard.feed(text[start:start + piece]):
            return start + piece
    return None


def test_a_looping_sentence_trips_the_guard_after_a_few_repeats() -> None:
    text = '{"steps": [{"instructions": "' + LOOP * 100
    tripped = feed(RepetitionGuard(), text)
    assert tripped is not None and tripped < len('{"steps": [{"instructions": "') + len(LOOP) * 12
    assert repeating_period(text) == len(LOOP)


def test_whitespace_run_of_a_grammar_loop_trips_the_guard() -> None:
    assert feed(RepetitionGuard(), '{"goals": [' + "\n" * 400) is not None


def test_ordinary_answers_do_not_trip_the_guard() -> None:
    plan = json.dumps({"steps": [{"instructions": f"Step {n}: add function f{n}(x) returning x * {n} to mod{n}.py",
                                  "files": [f"mod{n}.py"], "expects_changes": True} for n in range(20)]})
    prose = " ".join(f"Sentence {n} says something different about item {n * 7 % 13}." for n in range(60))
    code = "\n".join(f"    assert f({n}) == {n * n}" for n in range(60))
    for text in (plan, prose, code):
        assert feed(RepetitionGuard(), text) is None, text[:60]


def test_a_repetition_the_prompt_holds_is_copying_not_a_loop() -> None:
    transcript = "segment 1 " + "slovo " * 200
    assert feed(RepetitionGuard(prompt=transcript), transcript.upper()) is None
    assert feed(RepetitionGuard(prompt="correct this transcript"), transcript.upper()) is not None


def test_without_repetition_keeps_what_came_before_and_one_block() -> None:
    text = "The answer is 42. " + LOOP * 30
    assert without_repetition(text, len(LOOP)) == "The answer is 42. Add the function to calc.py"
