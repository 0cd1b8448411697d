def is_armstrong_number(number: int) -> bool:
    """Return True if `number` is the sum of its own digits each raised to the power of the number of digits."""
    raise NotImplementedError
