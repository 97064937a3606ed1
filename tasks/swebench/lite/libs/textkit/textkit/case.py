"""Changing the case and shape of identifiers and titles."""

import re
import unicodedata

SMALL_WORDS = {"a", "an", "and", "as", "at", "but", "by", "for", "in", "of", "on", "or",
               "the", "to", "via"}


def slugify(text, separator="-"):
    """Lower-case ASCII slug: accents stripped, runs of other characters become `separator`."""
    normalized = unicodedata.normalize("NFKD", text)
    ascii_text = normalized.encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-zA-Z0-9]+", separator, ascii_text).strip(separator)
    return slug.lower()


def camel_to_snake(name):
    """``HTTPServerError`` -> ``http_server_error``; ``userID`` -> ``user_id``."""
    step = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    step = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", step)
    return step.lower()


def snake_to_camel(name, upper_first=False):
    """``user_id`` -> ``userId`` (``UserId`` with `upper_first`); leading underscores kept."""
    stripped = name.lstrip("_")
    prefix = name[: len(name) - len(stripped)]
    parts = [p for p in stripped.split("_") if p]
    if not parts:
        return name
    first = parts[0].capitalize() if upper_first else parts[0].lower()
    return prefix + first + "".join(p.capitalize() for p in parts[1:])


def title_case(text):
    """Title case that keeps small words lower-case except at the start and the end."""
    words = text.split()
    result = []
    for i, word in enumerate(words):
        if 0 < i < len(words) - 1 and word.lower() in SMALL_WORDS:
            result.append(word.lower())
        else:
            result.append(word[:1].upper() + word[1:])
    return " ".join(result)
