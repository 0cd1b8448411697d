def distance(strand_a: str, strand_b: str) -> int:
    """Return the number of positions at which two equally long DNA strands differ; ValueError otherwise."""
    raise NotImplementedError
