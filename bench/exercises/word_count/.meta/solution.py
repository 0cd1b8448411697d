import re
from collections import Counter


def count_words(sentence: str) -> dict[str, int]:
    """Return how many times each word occurs in `sentence`: lower-cased word -> count."""
    return dict(Counter(re.findall(r"[a-z0-9]+(?:'[a-z0-9]+)*", sentence.lower())))
