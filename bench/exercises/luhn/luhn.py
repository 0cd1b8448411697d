def is_valid(number: str) -> bool:
    """Return True if `number` (digits, spaces allowed) passes the Luhn checksum, else False."""
    raise NotImplementedError
