def encode(string: str) -> str:
    """Return `string` run-length encoded: each run of a repeated character as <count><character>."""
    raise NotImplementedError


def decode(string: str) -> str:
    """Return the original string of a run-length encoded `string` (the reverse of `encode`)."""
    raise NotImplementedError
