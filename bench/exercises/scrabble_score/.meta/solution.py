LETTER_VALUES = {
    **dict.fromkeys("AEIOULNRST", 1),
    **dict.fromkeys("DG", 2),
    **dict.fromkeys("BCMP", 3),
    **dict.fromkeys("FHVWY", 4),
    "K": 5,
    **dict.fromkeys("JX", 8),
    **dict.fromkeys("QZ", 10),
}


def score(word: str) -> int:
    """Return the Scrabble score of `word`: the sum of its letters' values, ignoring case."""
    return sum(LETTER_VALUES[letter] for letter in word.upper())
