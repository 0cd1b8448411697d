import re
from itertools import groupby


def encode(string: str) -> str:
    """Return `string` run-length encoded: each run of a repeated character as <count><character>."""
    parts = []
    for char, run in groupby(string):
        length = len(list(run))
        parts.append(f"{length}{char}" if length > 1 else char)
    return "".join(parts)


def decode(string: str) -> str:
    """Return the original string of a run-length encoded `string` (the reverse of `encode`)."""
    return "".join(char * int(count or 1) for count, char in re.findall(r"(\d*)(\D)", string))
