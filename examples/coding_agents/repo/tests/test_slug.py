from textkit import slugify


def test_words_are_joined_by_one_hyphen():
    assert slugify("Hello, World!") == "hello-world"


def test_runs_of_punctuation_and_spaces_collapse():
    assert slugify("  a -- b  ") == "a-b"


def test_accents_are_folded_to_ascii():
    assert slugify("Crème brûlée") == "creme-brulee"


def test_a_cut_slug_never_ends_in_a_hyphen():
    assert slugify("alpha beta gamma", max_length=11) == "alpha-beta"
