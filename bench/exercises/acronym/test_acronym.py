import unittest

from acronym import abbreviate


class AcronymTest(unittest.TestCase):
    def test_basic(self) -> None:
        self.assertEqual(abbreviate("Portable Network Graphics"), "PNG")

    def test_lowercase_words(self) -> None:
        self.assertEqual(abbreviate("Ruby on Rails"), "ROR")

    def test_punctuation_after_a_word(self) -> None:
        self.assertEqual(abbreviate("First In, First Out"), "FIFO")

    def test_all_caps_word_gives_only_its_first_letter(self) -> None:
        self.assertEqual(abbreviate("GNU Image Manipulation Program"), "GIMP")

    def test_hyphen_separates_words(self) -> None:
        self.assertEqual(abbreviate("Complementary metal-oxide semiconductor"), "CMOS")

    def test_very_long_abbreviation(self) -> None:
        self.assertEqual(
            abbreviate("Rolling On The Floor Laughing So Hard That My Dogs Came Over And Licked Me"),
            "ROTFLSHTMDCOALM",
        )

    def test_hyphen_surrounded_by_spaces_is_not_a_word(self) -> None:
        self.assertEqual(abbreviate("Something - I made up from thin air"), "SIMUFTA")

    def test_apostrophe_inside_a_word_is_ignored(self) -> None:
        self.assertEqual(abbreviate("Halley's Comet"), "HC")

    def test_underscores_around_a_word_are_ignored(self) -> None:
        self.assertEqual(abbreviate("The Road _Not_ Taken"), "TRNT")


if __name__ == "__main__":
    unittest.main()
