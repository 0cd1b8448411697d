import unittest

from raindrops import convert


class RaindropsTest(unittest.TestCase):
    def test_the_sound_for_1_is_1(self) -> None:
        self.assertEqual(convert(1), "1")

    def test_the_sound_for_3_is_pling(self) -> None:
        self.assertEqual(convert(3), "Pling")

    def test_the_sound_for_5_is_plang(self) -> None:
        self.assertEqual(convert(5), "Plang")

    def test_the_sound_for_7_is_plong(self) -> None:
        self.assertEqual(convert(7), "Plong")

    def test_the_sound_for_9_is_pling_as_it_has_a_factor_3(self) -> None:
        self.assertEqual(convert(9), "Pling")

    def test_the_sound_for_15_is_pling_plang(self) -> None:
        self.assertEqual(convert(15), "PlingPlang")

    def test_the_sound_for_21_is_pling_plong(self) -> None:
        self.assertEqual(convert(21), "PlingPlong")

    def test_the_sound_for_35_is_plang_plong(self) -> None:
        self.assertEqual(convert(35), "PlangPlong")

    def test_the_sound_for_105_is_pling_plang_plong(self) -> None:
        self.assertEqual(convert(105), "PlingPlangPlong")

    def test_the_sound_for_52_is_52(self) -> None:
        self.assertEqual(convert(52), "52")


if __name__ == "__main__":
    unittest.main()
