"""RND-PPO's numbers by hand: two-headed GAE, the combined advantage, the reward scale.

A 3-step chunk, once ending in termination and once cut (truncated / end of a sample):
the extrinsic head bootstraps only after the cut, the intrinsic head after both.
"""

import numpy as np
import pytest

from rl_bk.algorithms.rnd_ppo.advantages import (
    RewardForwardFilter,
    combine_advantages,
    gae,
    merge_moments,
    scale_by_return_std,
    standardize,
    two_headed_advantages,
)

EXT_REWARDS = [0.0, 0.0, 1.0]
INT_REWARDS = [1.0, 2.0, 3.0]
EXT_VALUES = [0.5, 0.5, 0.5, 10.0]  # the last one: V_ext of the chunk's final observation
INT_VALUES = [1.0, 1.0, 1.0, 4.0]  # the last one: V_int of the chunk's final observation


def heads(terminated: bool, lambda_: float = 1.0):
    return two_headed_advantages(EXT_REWARDS, INT_REWARDS, EXT_VALUES, INT_VALUES, terminated,
                                 gamma=0.9, int_gamma=0.5, lambda_=lambda_)  # fmt: skip


def test_extrinsic_return_stops_at_termination():
    # G2 = 1, G1 = 0.9 * 1, G0 = 0.9 * 0.9: V_ext(final) = 10 is not used.
    h = heads(terminated=True)
    np.testing.assert_allclose(h.ext_returns, [0.81, 0.9, 1.0])
    np.testing.assert_allclose(h.ext_advantages, [0.31, 0.4, 0.5])


def test_extrinsic_return_bootstraps_after_a_cut():
    # G2 = 1 + 0.9 * 10 = 10, G1 = 0.9 * 10, G0 = 0.9 * 9.
    h = heads(terminated=False)
    np.testing.assert_allclose(h.ext_returns, [8.1, 9.0, 10.0])
    np.testing.assert_allclose(h.ext_advantages, [7.6, 8.5, 9.5])


@pytest.mark.parametrize("terminated", [True, False])
def test_intrinsic_return_bootstraps_across_the_terminal_too(terminated):
    # Non-episodic, int_gamma 0.5: G2 = 3 + 0.5 * 4 = 5, G1 = 2 + 2.5, G0 = 1 + 2.25.
    h = heads(terminated)
    np.testing.assert_allclose(h.int_returns, [3.25, 4.5, 5.0])
    np.testing.assert_allclose(h.int_advantages, [2.25, 3.5, 4.0])


def test_gae_with_lambda_below_one():
    # deltas: d2 = 1 - 0.5, d1 = d0 = 0.9 * 0.5 - 0.5; A_t = d_t + 0.9 * 0.5 * A_{t+1}.
    adv, ret = gae(EXT_REWARDS, EXT_VALUES, gamma=0.9, lambda_=0.5, bootstrap=False)
    np.testing.assert_allclose(adv, [0.02875, 0.175, 0.5])
    np.testing.assert_allclose(ret, np.array([0.02875, 0.175, 0.5]) + 0.5)


def test_gae_needs_one_value_more_than_rewards():
    with pytest.raises(ValueError, match="needs 4 values"):
        gae([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], gamma=0.9, lambda_=0.9, bootstrap=True)


def test_combined_advantage_weights_the_heads_then_standardizes():
    h = heads(terminated=True)
    combined = combine_advantages(h.ext_advantages, h.int_advantages, ext_coeff=2.0,
                                  int_coeff=1.0)  # fmt: skip
    np.testing.assert_allclose(combined, [2 * 0.31 + 2.25, 2 * 0.4 + 3.5, 2 * 0.5 + 4.0])
    z = standardize(combined)
    assert abs(z.mean()) < 1e-12 and abs(z.std() - 1.0) < 1e-12


def test_forward_filter_carries_each_episode_across_chunks_and_batches():
    f = RewardForwardFilter(gamma=0.5)
    # Two chunks of episode "a" in one batch: the second continues the first.
    out = f.update([("a", [1.0, 2.0]), ("b", [4.0]), ("a", [2.0])])
    np.testing.assert_allclose(out[0], [1.0, 2.5])  # 1, 0.5 * 1 + 2
    np.testing.assert_allclose(out[1], [4.0])
    np.testing.assert_allclose(out[2], [3.25])  # 0.5 * 2.5 + 2
    # Next batch: "b" continues; a stream absent from a batch is kept, until forgotten.
    np.testing.assert_allclose(f.update([("b", [0.0])])[0], [2.0])
    np.testing.assert_allclose(f.update([("a", [1.0])])[0], [2.625])  # 0.5 * 3.25 + 1
    f.forget("a")
    np.testing.assert_allclose(f.update([("a", [1.0])])[0], [1.0])


def test_forward_filter_keeps_only_the_streams_updated_last():
    f = RewardForwardFilter(gamma=1.0)
    f.MAX_STREAMS = 2
    f.update([("a", [1.0]), ("b", [1.0])])
    f.update([("a", [1.0]), ("c", [1.0])])  # "b" is now the least recently updated: dropped
    np.testing.assert_allclose([v[0] for v in f.update([("a", [0.0]), ("b", [0.0])])],
                               [2.0, 0.0])  # fmt: skip


def test_merge_moments_equals_the_moments_of_everything_seen():
    rng = np.random.default_rng(0)
    first, second = rng.normal(3.0, 2.0, 50), rng.normal(-1.0, 0.5, 70)
    mean, var, count = first.mean(), first.var(), len(first)
    mean, var, count = merge_moments(mean, var, count, second.mean(), second.var(), len(second))
    both = np.concatenate([first, second])
    np.testing.assert_allclose([mean, var, count], [both.mean(), both.var(), 120])


def test_intrinsic_rewards_are_divided_by_the_return_std_without_centering():
    np.testing.assert_allclose(scale_by_return_std(np.array([2.0, 4.0, 0.0]), 4.0),
                               [1.0, 2.0, 0.0], rtol=1e-6)  # fmt: skip
