import unittest

from collatz_conjecture import steps


class CollatzConjectureTest(unittest.TestCase):
    def test_zero_steps_for_one(self) -> None:
        self.assertEqual(steps(1), 0)

    def test_divide_if_even(self) -> None:
        self.assertEqual(steps(16), 4)

    def test_even_and_odd_steps(self) -> None:
        self.assertEqual(steps(12), 9)

    def test_large_number_of_even_and_odd_steps(self) -> None:
        self.assertEqual(steps(1000000), 152)

    def test_zero_is_an_error_with_its_message(self) -> None:
        with self.assertRaises(ValueError) as err:
            steps(0)
        self.assertEqual(str(err.exception), "Only positive integers are allowed")

    def test_negative_value_is_an_error_with_its_message(self) -> None:
        with self.assertRaises(ValueError) as err:
            steps(-15)
        self.assertEqual(str(err.exception), "Only positive integers are allowed")


if __name__ == "__main__":
    unittest.main()
