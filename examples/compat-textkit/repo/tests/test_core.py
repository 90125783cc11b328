import pytest

from textkit import slugify, truncate, word_count


def test_slugify_single_word():
    assert slugify("hello") == "hello"


def test_slugify_lowercases():
    assert slugify("TextKit") == "textkit"


def test_slugify_one_space():
    assert slugify("hello world") == "hello-world"


def test_slugify_drops_accents():
    assert slugify("café") == "cafe"


def test_word_count():
    assert word_count("one two  three") == 3


def test_word_count_empty():
    assert word_count("") == 0


def test_truncate_keeps_short_text():
    assert truncate("short", 10) == "short"


def test_truncate_cuts_with_suffix():
    assert truncate("abcdefghij", 6) == "abc..."


def test_truncate_rejects_tiny_width():
    with pytest.raises(ValueError):
        truncate("abc", 2)
