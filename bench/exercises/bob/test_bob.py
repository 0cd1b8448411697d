import unittest

from bob import response


class BobTest(unittest.TestCase):
    def test_stating_something(self) -> None:
        self.assertEqual(response("Tom-ay-to, tom-aaaah-to."), "Whatever.")

    def test_shouting(self) -> None:
        self.assertEqual(response("WATCH OUT!"), "Whoa, chill out!")

    def test_asking_a_question(self) -> None:
        self.assertEqual(response("Does this cryogenic chamber make me look fat?"), "Sure.")

    def test_forceful_question(self) -> None:
        self.assertEqual(response("WHAT'S GOING ON?"), "Calm down, I know what I'm doing!")

    def test_talking_forcefully_with_an_exclamation_mark_is_not_shouting(self) -> None:
        self.assertEqual(response("Hi there!"), "Whatever.")

    def test_acronyms_in_regular_speech_are_not_shouting(self) -> None:
        self.assertEqual(response("It's OK if you don't want to go work for NASA."), "Whatever.")

    def test_only_numbers_is_not_shouting(self) -> None:
        self.assertEqual(response("1, 2, 3"), "Whatever.")

    def test_shouting_with_numbers(self) -> None:
        self.assertEqual(response("1, 2, 3 GO!"), "Whoa, chill out!")

    def test_question_with_only_numbers(self) -> None:
        self.assertEqual(response("4?"), "Sure.")

    def test_question_with_trailing_whitespace(self) -> None:
        self.assertEqual(response("Okay if like my  spacebar  quite a bit?   "), "Sure.")

    def test_silence(self) -> None:
        self.assertEqual(response(""), "Fine. Be that way!")

    def test_prolonged_silence_of_spaces_tabs_and_newlines(self) -> None:
        self.assertEqual(response(" \t\t  \n \r "), "Fine. Be that way!")


if __name__ == "__main__":
    unittest.main()
