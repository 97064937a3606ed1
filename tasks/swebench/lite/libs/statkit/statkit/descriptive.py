"""Descriptive statistics."""

import math
from collections import Counter


class StatisticsError(ValueError):
    """Raised for empty data or undefined statistics."""


def _data(values):
    data = list(values)
    if not data:
        raise StatisticsError("no data points")
    return data


def mean(values):
    """Arithmetic mean."""
    data = _data(values)
    return math.fsum(data) / len(data)


def median(values):
    """Middle value; the mean of the two middle values for an even count."""
    data = sorted(_data(values))
    n = len(data)
    mid = n // 2
    if n % 2 == 1:
        return data[mid]
    return (data[mid - 1] + data[mid]) / 2


def mode(values):
    """Most common value; ties go to the value seen first."""
    data = _data(values)
    counts = Counter(data)
    best = max(counts.values())
    for value in data:
        if counts[value] == best:
            return value


def variance(values, sample=True):
    """Sample variance (n - 1 in the denominator) or population variance (`sample=False`)."""
    data = _data(values)
    n = len(data)
    if sample and n < 2:
        raise StatisticsError("sample variance needs at least two data points")
    m = mean(data)
    squares = math.fsum((x - m) ** 2 for x in data)
    return squares / (n - 1 if sample else n)


def stdev(values, sample=True):
    """Square root of `variance`."""
    return math.sqrt(variance(values, sample=sample))


def percentile(values, q):
    """The q-th percentile (0 <= q <= 100) with linear interpolation between ranks."""
    if not 0 <= q <= 100:
        raise StatisticsError("q must be between 0 and 100")
    data = sorted(_data(values))
    position = (len(data) - 1) * q / 100
    low = math.floor(position)
    high = math.ceil(position)
    if low == high:
        return data[int(position)]
    return data[low] + (data[high] - data[low]) * (position - low)
