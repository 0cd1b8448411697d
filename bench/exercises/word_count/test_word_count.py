import unittest

from word_count import count_words


class WordCountTest(unittest.TestCase):
    def test_count_one_word(self) -> None:
        self.assertEqual(count_words("word"), {"word": 1})

    def test_count_one_of_each_word(self) -> None:
        self.assertEqual(count_words("one of each"), {"one": 1, "of": 1, "each": 1})

    def test_multiple_occurrences_of_a_word(self) -> None:
        self.assertEqual(
            count_words("one fish two fish red fish blue fish"),
            {"one": 1, "fish": 4, "two": 1, "red": 1, "blue": 1},
        )

    def test_commas_without_spaces_separate_words(self) -> None:
        self.assertEqual(count_words("one,two,three"), {"one": 1, "two": 1, "three": 1})

    def test_commas_and_newlines_separate_words(self) -> None:
        self.assertEqual(count_words("one,\ntwo,\nthree"), {"one": 1, "two": 1, "three": 1})

    def test_punctuation_is_ignored(self) -> None:
        self.assertEqual(
            count_words("car: carpet as java: javascript!!&@$%^&"),
            {"car": 1, "carpet": 1, "as": 1, "java": 1, "javascript": 1},
        )

    def test_numbers_are_words(self) -> None:
        self.assertEqual(count_words("testing, 1, 2 testing"), {"testing": 2, "1": 1, "2": 1})

    def test_words_are_counted_case_insensitively_in_lower_case(self) -> None:
        self.assertEqual(count_words("go Go GO Stop stop"), {"go": 3, "stop": 2})

    def test_apostrophes_inside_words_are_kept(self) -> None:
        self.assertEqual(
            count_words("'First: don't laugh. Then: don't cry. You're getting it.'"),
            {"first": 1, "don't": 2, "laugh": 1, "then": 1, "cry": 1, "you're": 1, "getting": 1, "it": 1},
        )

    def test_quotation_marks_around_a_word_are_not_part_of_it(self) -> None:
        self.assertEqual(
            count_words("Joe can't tell between 'large' and large."),
            {"joe": 1, "can't": 1, "tell": 1, "between": 1, "large": 2, "and": 1},
        )

    def test_multiple_spaces_are_not_words(self) -> None:
        self.assertEqual(count_words(" multiple   whitespaces"), {"multiple": 1, "whitespaces": 1})

    def test_alternating_separators_and_quotes(self) -> None:
        self.assertEqual(count_words(",\n,one,\n ,two \n 'three'"), {"one": 1, "two": 1, "three": 1})


if __name__ == "__main__":
    unittest.main()
