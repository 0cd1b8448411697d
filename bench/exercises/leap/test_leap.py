import unittest

from leap import leap_year


class LeapTest(unittest.TestCase):
    def test_year_not_divisible_by_4_is_common_year(self) -> None:
        self.assertIs(leap_year(2015), False)

    def test_year_divisible_by_2_not_divisible_by_4_is_common_year(self) -> None:
        self.assertIs(leap_year(1970), False)

    def test_year_divisible_by_4_not_divisible_by_100_is_leap_year(self) -> None:
        self.assertIs(leap_year(1996), True)

    def test_year_divisible_by_4_and_5_is_still_a_leap_year(self) -> None:
        self.assertIs(leap_year(1960), True)

    def test_year_divisible_by_100_not_divisible_by_400_is_common_year(self) -> None:
        self.assertIs(leap_year(2100), False)

    def test_year_1900_is_not_a_leap_year(self) -> None:
        self.assertIs(leap_year(1900), False)

    def test_year_divisible_by_400_is_leap_year(self) -> None:
        self.assertIs(leap_year(2000), True)

    def test_year_divisible_by_200_not_divisible_by_400_is_common_year(self) -> None:
        self.assertIs(leap_year(1800), False)


if __name__ == "__main__":
    unittest.main()
