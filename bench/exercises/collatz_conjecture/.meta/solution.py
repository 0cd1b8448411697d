def steps(number: int) -> int:
    """Return how many Collatz steps it takes to reach 1 from `number`; ValueError for numbers below 1."""
    if number < 1:
        raise ValueError("Only positive integers are allowed")
    count = 0
    while number != 1:
        number = number // 2 if number % 2 == 0 else 3 * number + 1
        count += 1
    return count
