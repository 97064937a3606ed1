"""Wrapping, indenting and shortening text."""


def wrap(text, width=70):
    """Greedy word wrap: lines of at most `width` characters (a longer word gets its own line)."""
    if width <= 0:
        raise ValueError("width must be positive")
    lines, current = [], ""
    for word in text.split():
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width:
            current += " " + word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def indent(text, prefix="    ", skip_blank=True):
    """Prefix every line of `text`; blank lines stay empty unless `skip_blank` is false."""
    out = []
    for line in text.splitlines(keepends=True):
        if skip_blank and not line.strip():
            out.append(line)
        else:
            out.append(prefix + line)
    return "".join(out)


def shorten(text, width, placeholder="..."):
    """Collapse whitespace and cut at a word boundary so the result fits `width` characters."""
    words = text.split()
    joined = " ".join(words)
    if len(joined) <= width:
        return joined
    if len(placeholder) > width:
        raise ValueError("placeholder too long for width")
    result = ""
    for word in words:
        candidate = f"{result} {word}" if result else word
        if len(candidate) + len(placeholder) + 1 > width:
            break
        result = candidate
    return f"{result} {placeholder}" if result else placeholder


def count_words(text):
    """Number of words: runs of letters, digits, apostrophes and hyphens."""
    import re

    return len(re.findall(r"[\w'-]+", text))
