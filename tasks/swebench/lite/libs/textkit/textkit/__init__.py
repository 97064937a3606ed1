"""textkit: small text utilities."""

from textkit.case import camel_to_snake, slugify, snake_to_camel, title_case
from textkit.wrap import indent, shorten, wrap, count_words

__all__ = ["camel_to_snake", "slugify", "snake_to_camel", "title_case", "indent", "shorten",
           "wrap", "count_words"]
