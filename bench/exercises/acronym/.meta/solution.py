import re


def abbreviate(words: str) -> str:
    """Return the acronym of `words`: the upper-cased first letter of each word."""
    return "".join(word[0] for word in re.findall(r"[A-Za-z][A-Za-z']*", words)).upper()
