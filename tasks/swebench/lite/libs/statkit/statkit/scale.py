"""Scaling and smoothing."""

from statkit.descriptive import StatisticsError, mean, stdev


def clamp(value, low, high):
    """`value` limited to the closed interval [low, high]."""
    if low > high:
        raise ValueError("low must not exceed high")
    return max(low, min(value, high))


def minmax_scale(values, low=0.0, high=1.0):
    """Map values linearly onto [low, high]; constant data maps to `low`."""
    data = list(values)
    if not data:
        return []
    smallest, largest = min(data), max(data)
    span = largest - smallest
    if span == 0:
        return [low for _ in data]
    return [low + (x - smallest) * (high - low) / span for x in data]


def moving_average(values, window):
    """Means of every run of `window` consecutive values (len(values) - window + 1 of them)."""
    if window <= 0:
        raise ValueError("window must be positive")
    data = list(values)
    if window > len(data):
        return []
    total = sum(data[:window])
    out = [total / window]
    for i in range(window, len(data)):
        total += data[i] - data[i - window]
        out.append(total / window)
    return out


def zscores(values):
    """(x - mean) / sample standard deviation for each value."""
    data = list(values)
    if len(data) < 2:
        raise StatisticsError("z-scores need at least two data points")
    m, s = mean(data), stdev(data)
    if s == 0:
        return [0.0 for _ in data]
    return [(x - m) / s for x in data]
