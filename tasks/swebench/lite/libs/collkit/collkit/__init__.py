"""collkit: helpers for lists and dictionaries."""

from collkit.seq import chunk, flatten, pairwise, unique, window
from collkit.mapping import deep_merge, get_path, group_by, invert

__all__ = ["chunk", "flatten", "pairwise", "unique", "window", "deep_merge", "get_path",
           "group_by", "invert"]
