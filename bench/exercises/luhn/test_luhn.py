import unittest

from luhn import is_valid


class LuhnTest(unittest.TestCase):
    def test_single_digit_strings_are_not_valid(self) -> None:
        self.assertIs(is_valid("1"), False)

    def test_a_single_zero_is_invalid(self) -> None:
        self.assertIs(is_valid("0"), False)

    def test_a_single_zero_with_space_is_invalid(self) -> None:
        self.assertIs(is_valid(" 0"), False)

    def test_a_simple_valid_number_that_remains_valid_if_reversed(self) -> None:
        self.assertIs(is_valid("059"), True)

    def test_a_simple_valid_number_that_becomes_invalid_if_reversed(self) -> None:
        self.assertIs(is_valid("59"), True)

    def test_a_valid_canadian_sin_with_spaces(self) -> None:
        self.assertIs(is_valid("055 444 285"), True)

    def test_an_invalid_canadian_sin(self) -> None:
        self.assertIs(is_valid("055 444 286"), False)

    def test_an_invalid_credit_card(self) -> None:
        self.assertIs(is_valid("8273 1232 7352 0569"), False)

    def test_doubling_a_digit_above_4_subtracts_9(self) -> None:
        self.assertIs(is_valid("091"), True)

    def test_more_than_a_single_zero_is_valid(self) -> None:
        self.assertIs(is_valid("0000 0"), True)

    def test_hyphens_are_not_allowed(self) -> None:
        self.assertIs(is_valid("055-444-285"), False)

    def test_punctuation_and_letters_are_not_allowed(self) -> None:
        self.assertIs(is_valid("055# 444$ 28a"), False)


if __name__ == "__main__":
    unittest.main()
