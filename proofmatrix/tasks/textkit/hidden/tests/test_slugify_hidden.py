from textkit import slugify


def test_collapses_runs_of_separators():
    assert slugify("Hello, World!") == "hello-world"


def test_strips_leading_and_trailing_separators():
    assert slugify("  -- Draft: v2 --  ") == "draft-v2"


def test_punctuation_only_gives_empty_slug():
    assert slugify("!!!") == ""
