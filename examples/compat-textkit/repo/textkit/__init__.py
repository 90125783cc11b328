"""textkit: small text helpers."""

from textkit.core import slugify, truncate, word_count

__all__ = ["slugify", "truncate", "word_count"]
__version__ = "0.3.0"
