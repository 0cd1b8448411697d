import unittest

from scrabble_score import score


class ScrabbleScoreTest(unittest.TestCase):
    def test_lowercase_letter(self) -> None:
        self.assertEqual(score("a"), 1)

    def test_uppercase_letter(self) -> None:
        self.assertEqual(score("A"), 1)

    def test_valuable_letter(self) -> None:
        self.assertEqual(score("f"), 4)

    def test_short_word(self) -> None:
        self.assertEqual(score("at"), 2)

    def test_short_valuable_word(self) -> None:
        self.assertEqual(score("zoo"), 12)

    def test_medium_word(self) -> None:
        self.assertEqual(score("street"), 6)

    def test_medium_valuable_word(self) -> None:
        self.assertEqual(score("quirky"), 22)

    def test_long_mixed_case_word(self) -> None:
        self.assertEqual(score("OxyphenButazone"), 41)

    def test_empty_input_scores_zero(self) -> None:
        self.assertEqual(score(""), 0)

    def test_entire_alphabet_available(self) -> None:
        self.assertEqual(score("abcdefghijklmnopqrstuvwxyz"), 87)


if __name__ == "__main__":
    unittest.main()
