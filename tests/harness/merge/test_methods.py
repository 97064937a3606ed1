"""Merge methods against hand-computed cases of their published rules, and RAM+'s two
variants told apart."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core import ConfigError
from harness.merge.methods import (MergeParams, linear, ram, ram_counts, ramplus, ramplus_tl,
                                   task_arithmetic, ties, trim_to_density)

BASE = np.zeros(4)


def test_linear_and_task_arithmetic_by_hand():
    models = np.array([[1.0, 2.0], [3.0, 6.0]])
    assert linear(models, MergeParams(weights=(1, 3))).tolist() == [2.5, 5.0]
    base = np.array([1.0, 1.0])
    # deltas (0, 1) and (2, 5): 0.5 * (0, 1) + 1 * (2, 5) = (2, 5.5)
    merged = task_arithmetic(models, base, MergeParams(weights=(0.5, 1.0)))
    assert merged.tolist() == [3.0, 6.5]
    assert task_arithmetic(models, base, MergeParams(scale=0.5)).tolist() == [2.0, 4.0]


def test_trim_keeps_the_largest_magnitudes():
    delta = np.array([0.1, -0.5, 0.3, -0.05])
    assert trim_to_density(delta, 0.5).tolist() == [0.0, -0.5, 0.3, 0.0]
    assert trim_to_density(delta, 1.0) is delta
    with pytest.raises(ConfigError, match="keeps no entry"):
        trim_to_density(delta, 0.1)


def test_ties_by_hand():
    # deltas: a = (+2, -1, +1, 0), b = (+1, +3, -2, 0); density 1, weights 1
    models = np.array([[2.0, -1.0, 1.0, 0.0], [1.0, 3.0, -2.0, 0.0]])
    # elected signs by the sum: (+3 -> +, +2 -> +, -1 -> -, 0 -> +)
    # coordinate 0: both agree -> (2 + 1) / 2; 1: only b -> 3; 2: only b -> -2; 3: none -> 0
    assert ties(models, BASE).tolist() == [1.5, 3.0, -2.0, 0.0]
    # weights (1, 0.5): weighted b = (0.5, 1.5, -1, 0); sums (2.5, 0.5, 0, 0) -> signs
    # (+, +, + (0 >= 0), +): 0: (2 + 0.5) / 1.5; 1: 1.5 / 0.5 = 3; 2: a's +1 / 1; 3: 0
    merged = ties(models, BASE, MergeParams(weights=(1, 0.5)))
    assert merged == pytest.approx([2.5 / 1.5, 3.0, 1.0, 0.0])
    # density 0.5 trims a to (2, 0, 0, 0) and b to (0, 3, -2, 0)
    trimmed = ties(models, BASE, MergeParams(densities=(0.5,)))
    assert trimmed.tolist() == [2.0, 3.0, -2.0, 0.0]


# three models over six coordinates; changed (|delta| > 1e-5) marked by x:
#        0     1     2     3     4     5
#   a    x     x     .     .     x     .
#   b    x     .     x     .     .     .
#   c    .     x     .     .     .     x    (coordinate 3: a change of 1e-6, below epsilon)
MODELS = np.array([[1.0, 2.0, 0.0, 1e-6, 4.0, 0.0],
                   [3.0, 0.0, 5.0, 0.0, 0.0, 0.0],
                   [0.0, 6.0, 0.0, 0.0, 0.0, 7.0]])
ZERO = np.zeros(6)


def test_ram_by_hand():
    # unique changes keep their value; shared ones are averaged over the models changing them
    assert ram(MODELS, ZERO).tolist() == [2.0, 4.0, 5.0, 0.0, 4.0, 7.0]


def test_ramplus_tensor_local_by_hand():
    # per model: shared / unique changed coordinates of this tensor
    # a: shared {0, 1}, unique {4} -> rho 2 -> clamp 0.2 -> x(1 + 0.1 * 0.2) = 1.02
    # b: shared {0}, unique {2} -> rho 1 -> 1.02; c: shared {1}, unique {5} -> 1.02
    assert ramplus_tl(MODELS, ZERO).tolist() == pytest.approx(
        [2.0, 4.0, 5.0 * 1.02, 0.0, 4.0 * 1.02, 7.0 * 1.02])
    loose = ramplus_tl(MODELS, ZERO, MergeParams(r=0.5, alpha=10.0))  # rho unclamped
    assert loose.tolist() == pytest.approx([2.0, 4.0, 5.0 * 1.5, 0.0, 4.0 * 2.0, 7.0 * 1.5])


def test_ramplus_original_counts_over_the_whole_model():
    counts = ram_counts(MODELS, ZERO, 1e-5)
    assert counts.tolist() == [[2, 1], [1, 1], [1, 1]]
    # over a model of this tensor and a second one where only a changes, uniquely, 3 times:
    totals = counts + np.array([[0, 3], [0, 0], [0, 0]])
    # a: rho = 2 / 4 -> 1 + 0.2 * 0.5 = 1.1; b, c: rho 1 -> 1 + 0.2 * 1 = 1.2
    merged = ramplus(MODELS, ZERO, totals=totals)
    assert merged.tolist() == pytest.approx([2.0, 4.0, 5.0 * 1.2, 0.0, 4.0 * 1.1, 7.0 * 1.2])
    # the tensor-local variant of the same tensor differs: the two are not the same method
    assert not np.allclose(merged, ramplus_tl(MODELS, ZERO))


def test_per_model_options_are_checked():
    with pytest.raises(ConfigError, match="3 weights for 2 models"):
        linear(np.ones((2, 3)), MergeParams(weights=(1, 2, 3)))
    with pytest.raises(ConfigError, match=r"densities must lie in \(0, 1\]"):
        ties(np.ones((2, 3)), np.zeros(3), MergeParams(densities=(0.0,)))
