"""The helpers themselves."""

import re
import unicodedata


def slugify(text: str) -> str:
    """Return a URL slug: ASCII, lower case, words joined by single hyphens.

    Accents are dropped, every run of other characters becomes one hyphen,
    and the slug never starts or ends with a hyphen:

        slugify("Hello, World!") == "hello-world"
    """
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]", "-", ascii_text.lower())


def word_count(text: str) -> int:
    """Return the number of whitespace-separated words in text."""
    return len(text.split())


def truncate(text: str, width: int, suffix: str = "...") -> str:
    """Shorten text to at most width characters, ending with suffix if cut."""
    if width < len(suffix):
        raise ValueError("width is smaller than the suffix")
    if len(text) <= width:
        return text
    return text[: width - len(suffix)] + suffix
