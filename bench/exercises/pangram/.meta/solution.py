import string


def is_pangram(sentence: str) -> bool:
    """Return True if `sentence` uses every letter of the English alphabet at least once, ignoring case."""
    return set(string.ascii_lowercase) <= set(sentence.lower())
