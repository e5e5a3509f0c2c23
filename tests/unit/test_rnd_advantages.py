"""RND-PPO's numbers by hand: two-headed GAE, the combined advantage, the reward scale.

A 3-step chunk, once ending in termination and once cut (truncated / end of a sample):
the extrinsic head bootstraps only after the cut, the intrinsic head after both.
"""

import numpy as np
import pytest

from rl_bk.methods.rnd.advantages import (
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
    return two_headed_advantages(
        EXT_REWARDS,
        INT_REWARDS,
        EXT_VALUES,
        INT_VALUES,
        terminated,
        gamma=0.9,
        int_gamma=0.5,
        lambda_=lambda_,
    )


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
    combined = combine_advantages(h.ext_advantages, h.int_advantages, ext_coeff=2.0, int_coeff=1.0)
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
    np.testing.assert_allclose([v[0] for v in f.update([("a", [0.0]), ("b", [0.0])])], [2.0, 0.0])


def test_merge_moments_equals_the_moments_of_everything_seen():
    rng = np.random.default_rng(0)
    first, second = rng.normal(3.0, 2.0, 50), rng.normal(-1.0, 0.5, 70)
    mean, var, count = first.mean(), first.var(), len(first)
    mean, var, count = merge_moments(mean, var, count, second.mean(), second.var(), len(second))
    both = np.concatenate([first, second])
    np.testing.assert_allclose([mean, var, count], [both.mean(), both.var(), 120])


def test_intrinsic_rewards_are_divided_by_the_return_std_without_centering():
    np.testing.assert_allclose(
        scale_by_return_std(np.array([2.0, 4.0, 0.0]), 4.0), [1.0, 2.0, 0.0], rtol=1e-6
    )


def test_both_heads_use_the_given_lambda():
    h = heads(terminated=True, lambda_=0.5)
    np.testing.assert_allclose(h.ext_advantages, [0.02875, 0.175, 0.5])  # as gae's test above
    # Intrinsic, int_gamma 0.5: d2 = 3 + 0.5 * 4 - 1 = 4, d1 = 2 + 0.5 - 1 = 1.5, d0 = 0.5;
    # A_t = d_t + 0.5 * 0.5 * A_{t+1}.
    np.testing.assert_allclose(h.int_advantages, [1.125, 2.5, 4.0])
    np.testing.assert_allclose(h.int_returns, [2.125, 3.5, 5.0])


# --------------------------------------------------------------------------- connectors
def chunks_with_artificial_steps(*specs):
    """Episode chunks ``(id, n observations, terminated)`` as the learner pipeline has them
    once PPO's AddOneTsToEpisodesAndTruncate has appended each one's artificial step."""
    from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    episodes = [
        SingleAgentEpisode(
            id_=eid,
            observations=[np.zeros(1, np.float32)] * n,
            actions=[0] * (n - 1),
            rewards=[0.0] * (n - 1),
            terminated=ends,
            len_lookback_buffer=0,
        )
        for eid, n, ends in specs
    ]
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=episodes, shared_data={})
    return episodes


class StubRND:
    """The RND module as the reward piece sees it: novelty = the observation itself, a
    fixed intrinsic-return variance of 4 (std 2)."""

    intrinsic_return_var = 4.0

    def unwrapped(self):
        return self

    def update_observation_stats(self, obs):
        self.obs_seen = obs[:, 0].tolist()

    def novelty(self, obs):
        return obs[:, 0]

    def update_intrinsic_return_stats(self, filtered):
        self.filtered = list(filtered)


def test_rnd_reward_of_a_step_is_the_novelty_of_the_next_observation_scaled():
    import torch
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.core.columns import Columns

    from rl_bk.methods.rnd.intrinsic_reward import ComputeIntrinsicRewards
    from rl_bk.methods.rnd.rl_module import RND_MODULE_ID

    episodes = chunks_with_artificial_steps(("a", 4, False), ("b", 2, True))
    # Rows: chunk a's observations 1, 2, 3 and its artificial row 4 (= its last observation);
    # chunk b's 10 and artificial 20.
    obs = torch.tensor([[1.0], [2.0], [3.0], [4.0], [10.0], [20.0]])
    real = torch.tensor([True, True, True, False, True, False])
    batch = {DEFAULT_MODULE_ID: {Columns.OBS: obs, Columns.LOSS_MASK: real}}
    rnd = StubRND()
    ComputeIntrinsicRewards(int_gamma=0.5)(
        rl_module={RND_MODULE_ID: rnd}, batch=batch, episodes=episodes
    )
    # r_t = novelty(s_{t+1}) / 2; the artificial rows get 0.
    np.testing.assert_allclose(
        batch[DEFAULT_MODULE_ID][Columns.INTRINSIC_REWARDS].numpy(), [1.0, 1.5, 2.0, 0.0, 10.0, 0.0]
    )
    assert rnd.obs_seen == [1.0, 2.0, 3.0, 10.0]  # real rows only
    # Discounted sums per chunk (gamma 0.5) of the raw rewards: 2, 1 + 3, 2 + 4; then 20.
    np.testing.assert_allclose(rnd.filtered, [2.0, 4.0, 6.0, 20.0])


class StubTwoHeads:
    """A policy whose value heads read their predictions from the batch."""

    def unwrapped(self):
        return self

    def compute_critic_embeddings(self, batch):
        return None

    def compute_values(self, batch, embeddings=None):
        return batch["ext_v"]

    def compute_intrinsic_values(self, batch, embeddings=None):
        return batch["int_v"]


def test_two_headed_gae_bootstraps_by_episode_end_and_standardizes_real_steps_only():
    import torch
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.core.columns import Columns
    from ray.rllib.evaluation.postprocessing import Postprocessing

    from rl_bk.methods.rnd.two_headed_gae import (
        INT_VALUE_TARGETS,
        TwoHeadedGeneralAdvantageEstimation,
    )

    # Two one-step chunks (a real row, then the artificial one holding the bootstrap values):
    # "a" terminated, "b" cut by the sampler.
    episodes = chunks_with_artificial_steps(("a", 2, True), ("b", 2, False))
    batch = {
        DEFAULT_MODULE_ID: {
            Columns.REWARDS: torch.tensor([1.0, 0.0, 0.0, 0.0]),
            Columns.INTRINSIC_REWARDS: torch.tensor([0.5, 0.0, 0.0, 0.0]),
            Columns.LOSS_MASK: torch.tensor([True, False, True, False]),
            "ext_v": torch.tensor([0.0, 10.0, 0.0, 2.0]),
            "int_v": torch.tensor([0.0, 1.0, 0.0, 0.0]),
        }
    }
    TwoHeadedGeneralAdvantageEstimation(
        gamma=0.9, int_gamma=0.5, lambda_=1.0, ext_coeff=1.0, int_coeff=0.5
    )(rl_module={DEFAULT_MODULE_ID: StubTwoHeads()}, batch=batch, episodes=episodes)
    out = batch[DEFAULT_MODULE_ID]
    # "a": G_ext = 1 (terminated: V_ext = 10 unused), G_int = 0.5 + 0.5 * 1 (non-episodic).
    # "b": G_ext = 0.9 * 2. Combined: 1 + 0.5 * 1 = 1.5 and 1.8, standardized: -1 and 1.
    np.testing.assert_allclose(
        out[Postprocessing.ADVANTAGES].numpy(), [-1.0, 0.0, 1.0, 0.0], atol=1e-6
    )
    np.testing.assert_allclose(out[Postprocessing.VALUE_TARGETS].numpy(), [1.0, 10.0, 1.8, 2.0])
    np.testing.assert_allclose(out[INT_VALUE_TARGETS].numpy(), [1.0, 1.0, 0.0, 0.0])
