def is_valid(number: str) -> bool:
    """Return True if `number` (digits, spaces allowed) passes the Luhn checksum, else False."""
    digits = number.replace(" ", "")
    if len(digits) <= 1 or not all(char in "0123456789" for char in digits):
        return False
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0
