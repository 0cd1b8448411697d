def steps(number: int) -> int:
    """Return how many Collatz steps it takes to reach 1 from `number`; ValueError for numbers below 1."""
    raise NotImplementedError
