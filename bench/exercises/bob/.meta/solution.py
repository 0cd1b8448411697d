def response(hey_bob: str) -> str:
    """Return what Bob, a lackadaisical teenager, answers to `hey_bob`."""
    said = hey_bob.strip()
    if not said:
        return "Fine. Be that way!"
    question = said.endswith("?")
    yelling = said.isupper()
    if question and yelling:
        return "Calm down, I know what I'm doing!"
    if yelling:
        return "Whoa, chill out!"
    if question:
        return "Sure."
    return "Whatever."
