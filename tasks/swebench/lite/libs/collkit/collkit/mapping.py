"""Dictionary helpers."""

import copy

_MISSING = object()


def deep_merge(base, override):
    """A new dict: `override` merged into `base`, nested dicts merged recursively; the inputs
    are not modified."""
    result = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def get_path(data, path, default=None, separator="."):
    """The value at a dotted `path` ("a.b.0.c") through dicts and lists, else `default`."""
    current = data
    for part in path.split(separator):
        if isinstance(current, dict):
            current = current.get(part, _MISSING)
        elif isinstance(current, (list, tuple)) and part.lstrip("-").isdigit():
            index = int(part)
            current = current[index] if -len(current) <= index < len(current) else _MISSING
        else:
            current = _MISSING
        if current is _MISSING:
            return default
    return current


def group_by(items, key):
    """{key(item): [items...]} with groups in first-seen order and items in input order."""
    groups = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


def invert(mapping, multi=False):
    """Values to keys. Duplicate values raise ValueError unless `multi` (then lists of keys)."""
    result = {}
    for key, value in mapping.items():
        if multi:
            result.setdefault(value, []).append(key)
        elif value in result:
            raise ValueError(f"duplicate value {value!r}")
        else:
            result[value] = key
    return result
