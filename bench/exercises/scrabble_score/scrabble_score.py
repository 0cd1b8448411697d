def score(word: str) -> int:
    """Return the Scrabble score of `word`: the sum of its letters' values, ignoring case."""
    raise NotImplementedError
