def count_words(sentence: str) -> dict[str, int]:
    """Return how many times each word occurs in `sentence`: lower-cased word -> count."""
    raise NotImplementedError
