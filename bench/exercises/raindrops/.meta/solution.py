SOUNDS = ((3, "Pling"), (5, "Plang"), (7, "Plong"))


def convert(number: int) -> str:
    """Return the raindrop sounds of `number` ("Pling", "Plang", "Plong"), or its digits if it has none."""
    sounds = "".join(sound for factor, sound in SOUNDS if number % factor == 0)
    return sounds or str(number)
