"""Sequence helpers."""


def chunk(items, size):
    """Consecutive lists of `size` items; the last one may be shorter."""
    if size <= 0:
        raise ValueError("size must be positive")
    items = list(items)
    return [items[i:i + size] for i in range(0, len(items), size)]


def flatten(items, depth=None):
    """Nested lists and tuples flattened (`depth` levels, all when None); strings stay whole."""
    out = []
    for item in items:
        if isinstance(item, (list, tuple)) and (depth is None or depth > 0):
            out.extend(flatten(item, None if depth is None else depth - 1))
        else:
            out.append(item)
    return out


def unique(items, key=None):
    """Items without repeats, first occurrence kept, order preserved (`key` decides sameness)."""
    seen = set()
    out = []
    for item in items:
        marker = key(item) if key is not None else item
        if marker in seen:
            continue
        seen.add(marker)
        out.append(item)
    return out


def window(items, size, step=1):
    """Tuples of `size` consecutive items, starting every `step` items (full windows only)."""
    if size <= 0 or step <= 0:
        raise ValueError("size and step must be positive")
    items = list(items)
    return [tuple(items[i:i + size]) for i in range(0, len(items) - size + 1, step)]


def pairwise(items):
    """Overlapping pairs: [a, b, c] -> [(a, b), (b, c)]."""
    return window(items, 2)
