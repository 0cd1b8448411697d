def is_pangram(sentence: str) -> bool:
    """Return True if `sentence` uses every letter of the English alphabet at least once, ignoring case."""
    raise NotImplementedError
