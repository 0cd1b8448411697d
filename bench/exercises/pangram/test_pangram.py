import unittest

from pangram import is_pangram


class PangramTest(unittest.TestCase):
    def test_empty_sentence_is_not_a_pangram(self) -> None:
        self.assertIs(is_pangram(""), False)

    def test_perfect_lower_case_alphabet_is_a_pangram(self) -> None:
        self.assertIs(is_pangram("abcdefghijklmnopqrstuvwxyz"), True)

    def test_only_lower_case_sentence_is_a_pangram(self) -> None:
        self.assertIs(is_pangram("the quick brown fox jumps over the lazy dog"), True)

    def test_sentence_missing_the_letter_x_is_not_a_pangram(self) -> None:
        self.assertIs(is_pangram("a quick movement of the enemy will jeopardize five gunboats"), False)

    def test_sentence_missing_the_letter_h_is_not_a_pangram(self) -> None:
        self.assertIs(is_pangram("five boxing wizards jump quickly at it"), False)

    def test_underscores_between_words_are_ignored(self) -> None:
        self.assertIs(is_pangram("the_quick_brown_fox_jumps_over_the_lazy_dog"), True)

    def test_numbers_in_the_sentence_are_ignored(self) -> None:
        self.assertIs(is_pangram("the 1 quick brown fox jumps over the 2 lazy dogs"), True)

    def test_mixed_case_and_punctuation_is_a_pangram(self) -> None:
        self.assertIs(is_pangram('"Five quacking Zephyrs jolt my wax bed."'), True)

    def test_upper_and_lower_case_of_the_same_letters_do_not_count_twice(self) -> None:
        self.assertIs(is_pangram("abcdefghijklm ABCDEFGHIJKLM"), False)

    def test_upper_case_sentence_is_a_pangram(self) -> None:
        self.assertIs(is_pangram("THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG"), True)


if __name__ == "__main__":
    unittest.main()
