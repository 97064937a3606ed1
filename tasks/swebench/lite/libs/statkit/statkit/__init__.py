"""statkit: descriptive statistics and scaling for plain Python sequences."""

from statkit.descriptive import mean, median, mode, percentile, variance, stdev
from statkit.scale import clamp, minmax_scale, moving_average, zscores

__all__ = ["mean", "median", "mode", "percentile", "variance", "stdev", "clamp",
           "minmax_scale", "moving_average", "zscores"]
