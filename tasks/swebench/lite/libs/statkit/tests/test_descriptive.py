import pytest

from statkit import mean, median, mode, percentile, stdev, variance
from statkit.descriptive import StatisticsError


def test_mean_basic():
    assert mean([1, 2, 3, 4]) == 2.5


def test_mean_empty():
    with pytest.raises(StatisticsError):
        mean([])


def test_median_odd():
    assert median([3, 1, 2]) == 2


def test_mode_basic():
    assert mode([1, 2, 2, 3]) == 2


def test_variance_sample():
    assert variance([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(32 / 7)


def test_stdev_population():
    assert stdev([2, 4, 4, 4, 5, 5, 7, 9], sample=False) == pytest.approx(2.0)


def test_percentile_bounds():
    assert percentile([1, 2, 3, 4, 5], 0) == 1
    assert percentile([1, 2, 3, 4, 5], 100) == 5
