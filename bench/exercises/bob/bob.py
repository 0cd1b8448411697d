def response(hey_bob: str) -> str:
    """Return what Bob, a lackadaisical teenager, answers to `hey_bob`."""
    raise NotImplementedError
