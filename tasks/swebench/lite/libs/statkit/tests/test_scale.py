import pytest

from statkit import clamp, minmax_scale, moving_average, zscores


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_minmax_scale_basic():
    assert minmax_scale([0, 5, 10]) == [0.0, 0.5, 1.0]


def test_moving_average_basic():
    assert moving_average([1, 2, 3, 4], 2) == [1.5, 2.5, 3.5]


def test_zscores_symmetric():
    assert zscores([1, 2, 3]) == pytest.approx([-1.0, 0.0, 1.0])
