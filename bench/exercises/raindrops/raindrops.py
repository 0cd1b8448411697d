def convert(number: int) -> str:
    """Return the raindrop sounds of `number` ("Pling", "Plang", "Plong"), or its digits if it has none."""
    raise NotImplementedError
