"""Potential-based shaping on hand-made episodes, checked by hand (no Ray)."""

import numpy as np
import pytest
from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from rl_bk.connectors.learner.potential_shaping import (
    PotentialBasedShaping,
    RunningStd,
    shaped_rewards,
)


def episode(obs, rewards, terminated):
    return SingleAgentEpisode(
        observations=[np.float32(o) for o in obs], actions=[0] * len(rewards),
        rewards=list(rewards), infos=[{"caption": f"s{o}"} for o in obs],
        terminated=terminated, len_lookback_buffer=0,
    ).to_numpy()  # fmt: skip


def phi_is_the_observation(chunks):
    return [np.asarray(c.observations[:, 0], dtype=np.float64) for c in chunks]


def run(episodes, **kwargs):
    """PPO's own first piece, then ours, as in the learner pipeline."""
    shared, logger = {}, MetricsLogger()
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=episodes,
                                    shared_data=shared)  # fmt: skip
    PotentialBasedShaping(potential_fn=phi_is_the_observation, **kwargs)(
        rl_module=None, batch={}, episodes=episodes, shared_data=shared, metrics=logger
    )
    return logger


def test_terminated_episode_by_hand():
    # Phi(s) = s, gamma 0.5: r' = r + 0.5 * Phi(s') - Phi(s), and Phi(terminal) = 0.
    ep = episode([0, 1, 2, 3], [0.0, 0.0, 1.0], terminated=True)
    run([ep], gamma=0.5)
    # step 0: 0 + 0.5*1 - 0 = 0.5; step 1: 0 + 0.5*2 - 1 = 0; step 2: 1 + 0 - 2 = -1
    # then PPO's artificial step: reward 0, untouched.
    np.testing.assert_allclose(ep.get_rewards(), [0.5, 0.0, -1.0, 0.0])


def test_truncated_chunk_keeps_the_last_potential_for_bootstrapping():
    ep = episode([0, 1, 2], [0.0, 0.0], terminated=False)  # a chunk cut mid-episode
    run([ep], gamma=0.5)
    # step 1: 0 + 0.5*2 - 1 = 0 (Phi(s_2) kept: the value bootstraps there)
    np.testing.assert_allclose(ep.get_rewards(), [0.5, 0.0, 0.0])


def test_each_chunk_gets_its_own_potentials_and_the_metrics_say_how_much():
    a = episode([0, 1, 2, 3], [0.0, 0.0, 1.0], terminated=True)
    b = episode([5, 4], [0.0], terminated=False)
    logger = run([a, b], gamma=1.0, coeff=2.0)
    # a: 2*(1-0), 2*(2-1), 1 + 2*(0-2) ; b: 2*(4-5)
    np.testing.assert_allclose(a.get_rewards(), [2.0, 2.0, -3.0, 0.0])
    np.testing.assert_allclose(b.get_rewards(), [-2.0, 0.0])
    # bonuses: a 2+2-4 = 0, b -2 -> per step -2/4, per chunk -2/2
    assert logger.peek("shaping_reward_mean") == pytest.approx(-0.5)
    assert logger.peek("shaping_return_mean") == pytest.approx(-1.0)


def test_one_potential_call_per_train_batch():
    calls = []

    def counting(chunks):
        calls.append(len(chunks))
        # Captions, actions and the real steps only (not PPO's artificial one) reach the source.
        assert chunks[0].captions == ["s0", "s1"] and list(chunks[1].actions) == [0, 0]
        assert chunks[0].terminated and not chunks[1].terminated
        return phi_is_the_observation(chunks)

    eps = [episode([0, 1], [0.0], True), episode([2, 3, 4], [0.0, 0.0], False)]
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=eps, shared_data={})
    PotentialBasedShaping(potential_fn=counting, gamma=0.9)(
        rl_module=None, batch={}, episodes=eps,
        shared_data={"_added_loss_mask_for_valid_episode_ts": True})  # fmt: skip
    assert calls == [2]


def test_shaped_rewards_rejects_a_wrong_number_of_potentials():
    with pytest.raises(ValueError, match="need 3 potentials for 2 steps"):
        shaped_rewards(np.zeros(2), np.zeros(2), gamma=0.9, coeff=1.0, terminated=False)


def test_running_std_matches_numpy_over_batches():
    rng = np.random.default_rng(0)
    data = rng.normal(3.0, 2.0, size=1000)
    rs = RunningStd()
    for chunk in np.array_split(data, 7):
        rs.update(chunk)
    assert rs.std == pytest.approx(data.std(), rel=1e-9)
    assert rs.mean == pytest.approx(data.mean(), rel=1e-9)


def test_extrinsic_coefficient_scales_only_the_env_reward():
    # BK trains on 10 * r_env + shaping; the logged shaping excludes the scaled env reward.
    ep = episode([0, 1, 2, 3], [0.0, 0.0, 1.0], terminated=True)
    logger = run([ep], gamma=0.5, extrinsic_coeff=10.0)
    np.testing.assert_allclose(ep.get_rewards(), [0.5, 0.0, 10.0 - 2.0, 0.0])
    assert logger.peek("shaping_return_mean") == pytest.approx(0.5 + 0.0 - 2.0)
