"""Noticing a model that repeats itself, while it streams.

A small model under a JSON grammar can loop inside a string ("Add the function. Add the
function. …") until its output cap: measured on the embedded 1.5B model, a step plan ran to
4,095 tokens in 347 s. A grammar bounds the shape, not the length; this guard cuts such a
stream after a few repetitions instead of after the cap, so the call fails in seconds and the
caller can retry it shorter or fall back.

The check is cheap (a periodicity test of the output's tail, run every few dozen characters):
the tail is a runaway when its last `min_chars` characters (at least `min_repeats` periods)
repeat one block of up to `max_period` characters.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RepetitionGuard:
    """Feeds on a stream's text; trips when its tail repeats itself. A repetition the prompt holds
    too (three blocks of it, case aside) is the model copying its input, not a loop: a transcript
    that says "slovo slovo slovo" is corrected into the same."""

    min_chars: int = 240
    """The repeated tail must be at least this long (short repeats are normal: "    ", "---")."""
    min_repeats: int = 4
    """…and hold the repeated block at least this many times."""
    max_period: int = 200
    """The longest repeated block looked for (a sentence or two)."""
    check_every: int = 32
    """Characters between two checks."""
    _tail: str = field(default="", repr=False)
    _unchecked: int = field(default=0, repr=False)
    prompt: str = ""
    """The request's text (lower-cased here): repetitions found in it are allowed."""
    period: int | None = None
    """The repeated block's length once tripped."""

    def __post_init__(self) -> None:
        self.prompt = self.prompt.lower()

    @property
    def window(self) -> int:
        return max(self.min_chars, self.max_period * self.min_repeats)

    def feed(self, piece: str) -> bool:
        """Add streamed text; True once the output's tail repeats itself."""
        if self.period is not None:
            return True
        self._tail = (self._tail + piece)[-self.window:]
        self._unchecked += len(piece)
        if self._unchecked < self.check_every:
            return False
        self._unchecked = 0
        period = repeating_period(self._tail, min_chars=self.min_chars, min_repeats=self.min_repeats,
                                  max_period=self.max_period)
        if period is not None and (self._tail[-period:] * 3).lower() not in self.prompt:
            self.period = period
        return self.period is not None


def repeating_period(text: str, *, min_chars: int = 240, min_repeats: int = 4, max_period: int = 200) -> int | None:
    """The shortest block length p such that `text` ends with a run of one p-character block
    repeated over max(min_chars, min_repeats·p) characters; None when it does not."""
    for period in range(1, max_period + 1):
        span = max(min_chars, period * min_repeats)
        if span > len(text):
            break
        tail = text[-span:]
        if tail[period:] == tail[:-period]:  # periodic: every character equals the one p before it
            return period
    return None


def without_repetition(text: str, period: int, *, keep_repeats: int = 1) -> str:
    """`text` with its repeating tail cut down to `keep_repeats` blocks (for a plain-text answer
    that looped after saying something useful). The repeating run starts where a character stops
    equalling the one a period later."""
    start = len(text) - period
    while start > 0 and text[start - 1] == text[start - 1 + period]:
        start -= 1
    return text[: start + period * keep_repeats].rstrip()
