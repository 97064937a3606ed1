"""Advantage estimators against hand-computed tables, identities and property tests."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core import UnknownNameError
from harness.train.advantages import (ESTIMATORS, AdvantageInputs, discounted_returns,
                                      dr_grpo, estimate, gae, gigpo, grpo,
                                      reinforce_pp_baseline, rloo, tree_advantages,
                                      zero_variance_fraction)

# Two groups: A = (1, 0, 0, 1) mean 0.5, sample std (ddof 1) = sqrt(1/3); B = (1, 1) a tie.
RETURNS = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]
GROUPS = [0, 0, 0, 0, 1, 1]
S = math.sqrt(1 / 3)


def test_grpo_hand_table():
    expected = [0.5 / S, -0.5 / S, -0.5 / S, 0.5 / S, 0.0, 0.0]
    np.testing.assert_allclose(grpo(RETURNS, GROUPS, eps=0.0), expected, rtol=1e-12)
    # eps enters the denominator only
    np.testing.assert_allclose(grpo(RETURNS, GROUPS, eps=0.1)[:4],
                               [0.5 / (S + 0.1), -0.5 / (S + 0.1), -0.5 / (S + 0.1),
                                0.5 / (S + 0.1)])


def test_grpo_three_values_hand_table():
    # (3, 1, 2): mean 2, sample std 1
    np.testing.assert_allclose(grpo([3.0, 1.0, 2.0], [7, 7, 7], eps=0.0), [1.0, -1.0, 0.0])


def test_singleton_groups_and_ties_give_zero_for_every_estimator():
    returns, groups = [5.0, 2.0, 2.0], ["solo", "tie", "tie"]
    for function in (grpo, dr_grpo, rloo, reinforce_pp_baseline):
        np.testing.assert_array_equal(function(returns, groups), [0.0, 0.0, 0.0])


def test_dr_grpo_is_mean_centred_without_std():
    np.testing.assert_allclose(dr_grpo(RETURNS, GROUPS), [0.5, -0.5, -0.5, 0.5, 0.0, 0.0])


def test_rloo_hand_table_and_identity():
    # group (1, 0, 0, 1): leave-one-out means (1/3, 2/3, 2/3, 1/3)
    np.testing.assert_allclose(rloo(RETURNS, GROUPS), [2 / 3, -2 / 3, -2 / 3, 2 / 3, 0, 0])
    rng = np.random.default_rng(0)
    returns = rng.normal(size=40)
    groups = np.repeat(np.arange(8), 5)
    # RLOO = G / (G - 1) * (R - mean): Kool et al.'s identity
    np.testing.assert_allclose(rloo(returns, groups), 5 / 4 * dr_grpo(returns, groups),
                               rtol=1e-12)


def test_reinforce_pp_uses_the_batch_std():
    centred = np.array([0.5, -0.5, -0.5, 0.5, 0.0, 0.0])
    expected = centred / centred.std()
    np.testing.assert_allclose(reinforce_pp_baseline(RETURNS, GROUPS, eps=0.0), expected)


def test_zero_variance_fraction():
    assert zero_variance_fraction(RETURNS, GROUPS) == 0.5
    assert zero_variance_fraction([1.0, 2.0], [0, 1]) == 1.0  # singletons cannot vary


def test_discounted_returns_restart_at_episode_boundaries():
    rewards = [0.0, 0.0, 1.0, 0.0, 1.0]
    episodes = [0, 0, 0, 1, 1]
    np.testing.assert_allclose(discounted_returns(rewards, episodes, gamma=0.5),
                               [0.25, 0.5, 1.0, 0.5, 1.0])


def test_gae_hand_table():
    # one episode, rewards (0, 1), values (0.5, 0.25), gamma 1, lambda 0.5
    # delta_1 = 1 - 0.25 = 0.75; delta_0 = 0 + 0.25 - 0.5 = -0.25
    # A_1 = 0.75; A_0 = -0.25 + 0.5 * 0.75 = 0.125
    advantages, targets = gae([0.0, 1.0], [0.5, 0.25], [0, 0], gamma=1.0, lam=0.5)
    np.testing.assert_allclose(advantages, [0.125, 0.75])
    np.testing.assert_allclose(targets, [0.625, 1.0])
    # lambda = 1 and zero values: the advantage is the discounted return
    rewards, episodes = [0.0, 0.0, 1.0, 2.0], [0, 0, 0, 1]
    np.testing.assert_allclose(gae(rewards, np.zeros(4), episodes, gamma=0.9, lam=1.0)[0],
                               discounted_returns(rewards, episodes, gamma=0.9))


def test_gigpo_hand_table():
    # group of 2 episodes on one map. Episode 0: states a -> b, rewards (0, 1): return 1.
    # Episode 1: states a -> c, rewards (0, 0): return 0.
    rewards = [0.0, 1.0, 0.0, 0.0]
    episodes = [0, 0, 1, 1]
    groups = [0, 0, 0, 0]
    keys = ["a", "b", "a", "c"]
    adv, sizes = gigpo(rewards, episodes, groups, keys, gamma=0.5, step_weight=1.0, eps=0.0)
    a_episode = 0.5 / math.sqrt(0.5)        # (1 - 0.5) / std(1, 0) with ddof 1
    # step group "a": discounted returns 0.5 and 0: (0.5 - 0.25) / std(0.5, 0) = a_episode
    np.testing.assert_allclose(adv, [a_episode + a_episode, a_episode + 0.0,
                                     -a_episode - a_episode, -a_episode + 0.0])
    np.testing.assert_array_equal(sizes, [2, 1, 2, 1])


def test_gigpo_singleton_step_groups_reduce_to_grpo():
    rewards = [0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    episodes = [0, 0, 1, 1, 2, 2]
    groups = [0] * 6
    keys = ["s0", "s1", "s2", "s3", "s4", "s5"]  # every state visited once
    adv, sizes = gigpo(rewards, episodes, groups, keys)
    episode_adv = grpo([1.0, 0.0, 1.0], [0, 0, 0])
    np.testing.assert_allclose(adv, np.repeat(episode_adv, 2))
    assert (sizes == 1).all()


def test_gigpo_groups_steps_only_within_their_episode_group():
    # the same state key in two different groups must not be pooled
    rewards = [1.0, 0.0, 1.0, 0.0]
    episodes = [0, 1, 2, 3]
    groups = [0, 0, 1, 1]
    _, sizes = gigpo(rewards, episodes, groups, ["x", "x", "x", "x"])
    np.testing.assert_array_equal(sizes, [2, 2, 2, 2])


def test_tree_advantages_hand_table():
    # One tree: the root state (node 0); two first actions lead to nodes 1 and 2; node 1
    # forks into leaves with returns 1 and 0 (nodes 3, 4); node 2 is one leaf with return 1.
    # Steps, one row per (leaf episode, step):
    episodes = [0, 0, 1, 1, 2, 2]
    nodes = [1, 3, 1, 4, 2, 5]
    parents = [0, 1, 0, 1, 0, 2]
    returns = [1.0, 1.0, 0.0, 0.0, 1.0, 1.0]
    groups = [0] * 6
    out = tree_advantages(returns, episodes, nodes, parents, groups, leaf_weighting=False)
    v_root, v1, v2 = 2 / 3, 0.5, 1.0
    expected = [(v1 - v_root) * 2, (1 - v1) + (1 - v_root), (v1 - v_root) * 2,
                (0 - v1) + (0 - v_root), (v2 - v_root) * 2, (1 - v2) + (1 - v_root)]
    np.testing.assert_allclose(out, expected)
    weighted = tree_advantages(returns, episodes, nodes, parents, groups)
    np.testing.assert_allclose(weighted[0], expected[0] / math.sqrt(2))
    local = tree_advantages(returns, episodes, nodes, parents, groups, leaf_weighting=False,
                            local_only=True)
    np.testing.assert_allclose(local, [v1 - v_root, 1 - v1, v1 - v_root, -v1, v2 - v_root, 0.0])


def test_registry_broadcasts_episode_advantages_to_steps():
    inputs = AdvantageInputs(episode=np.array([0, 0, 1, 1, 1]), group=np.zeros(5, int),
                             reward=np.array([0.0, 1.0, 0.0, 0.0, 0.0]),
                             state_key=np.array(list("abcde"), dtype=object))
    out = estimate("grpo", inputs, eps=0.0)
    a = 0.5 / math.sqrt(0.5)
    np.testing.assert_allclose(out.advantages, [a, a, -a, -a, -a])
    assert out.diagnostics["zero_variance_groups"] == 0.0
    with pytest.raises(UnknownNameError, match="did you mean 'grpo'"):
        estimate("grpoo", inputs)
    assert set(ESTIMATORS) == {"grpo", "dr_grpo", "rloo", "reinforce_pp", "gae", "gigpo",
                               "tree"}
    for name, function in ESTIMATORS.items():
        assert "Source" in (function.__doc__ or ""), f"{name} does not state its source"


group_sizes = st.lists(st.integers(1, 6), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(sizes=group_sizes, seed=st.integers(0, 2**16))
def test_group_estimators_sum_to_zero_within_groups(sizes, seed):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(len(sizes)), sizes)
    returns = rng.integers(0, 3, size=groups.size).astype(float)
    for function in (grpo, dr_grpo, rloo):
        adv = function(returns, groups)
        sums = np.bincount(groups, weights=adv)
        np.testing.assert_allclose(sums, 0.0, atol=1e-9)
        # invariant to shifting every return by a constant
        np.testing.assert_allclose(function(returns + 3.5, groups), adv, atol=1e-9)
