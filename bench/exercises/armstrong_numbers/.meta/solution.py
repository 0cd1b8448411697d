def is_armstrong_number(number: int) -> bool:
    """Return True if `number` is the sum of its own digits each raised to the power of the number of digits."""
    digits = str(number)
    total = 0
    for digit in digits:
        total += int(digit) ** len(digits)
    return total == number
