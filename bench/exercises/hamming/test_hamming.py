import unittest

from hamming import distance


class HammingTest(unittest.TestCase):
    def test_empty_strands(self) -> None:
        self.assertEqual(distance("", ""), 0)

    def test_single_letter_identical_strands(self) -> None:
        self.assertEqual(distance("A", "A"), 0)

    def test_single_letter_different_strands(self) -> None:
        self.assertEqual(distance("G", "T"), 1)

    def test_long_identical_strands(self) -> None:
        self.assertEqual(distance("GGACTGAAATCTG", "GGACTGAAATCTG"), 0)

    def test_long_different_strands(self) -> None:
        self.assertEqual(distance("GGACGGATTCTG", "AGGACGGATTCT"), 9)

    def test_first_strand_longer_is_an_error_with_its_message(self) -> None:
        with self.assertRaises(ValueError) as err:
            distance("AATG", "AAA")
        self.assertEqual(str(err.exception), "Strands must be of equal length")

    def test_second_strand_longer_is_an_error_with_its_message(self) -> None:
        with self.assertRaises(ValueError) as err:
            distance("ATA", "AGTG")
        self.assertEqual(str(err.exception), "Strands must be of equal length")

    def test_empty_first_strand_is_an_error_with_its_message(self) -> None:
        with self.assertRaises(ValueError) as err:
            distance("", "G")
        self.assertEqual(str(err.exception), "Strands must be of equal length")

    def test_empty_second_strand_is_an_error_with_its_message(self) -> None:
        with self.assertRaises(ValueError) as err:
            distance("G", "")
        self.assertEqual(str(err.exception), "Strands must be of equal length")


if __name__ == "__main__":
    unittest.main()
