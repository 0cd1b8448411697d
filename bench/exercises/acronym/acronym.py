def abbreviate(words: str) -> str:
    """Return the acronym of `words`: the upper-cased first letter of each word."""
    raise NotImplementedError
