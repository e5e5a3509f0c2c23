"""PTGM's RL side without Ray: the KL reward by hand, the high-level env with a stand-in
for the pre-trained models, and the env-step count of a result."""

from __future__ import annotations

import math
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from rl_bk.connectors.learner.reward_rewrite import RewriteRewards
from rl_bk.methods.ptgm.env_steps import (
    EPISODE_DECISIONS,
    EPISODE_ENV_STEPS,
    HIGH_LEVEL_STEPS,
    LOW_LEVEL_STEPS,
    count_env_steps,
)
from rl_bk.methods.ptgm.high_level_env import HighLevelGoalEnv
from rl_bk.methods.ptgm.prior_kl import (
    AGREEMENT,
    PRIOR_KL_MEAN,
    PriorKLPenalty,
    categorical_kl,
)


def test_categorical_kl_by_hand():
    # policy (1/2, 1/2), prior (1/4, 3/4): KL = 1/2 ln 2 + 1/2 ln(2/3)
    policy = torch.log(torch.tensor([[0.5, 0.5]]))
    prior = torch.log(torch.tensor([[0.25, 0.75]]))
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert categorical_kl(policy, prior).item() == pytest.approx(expected, abs=1e-6)
    # the direction matters: KL(prior || policy) differs
    reverse = 0.25 * math.log(0.25 / 0.5) + 0.75 * math.log(0.75 / 0.5)
    assert categorical_kl(prior, policy).item() == pytest.approx(reverse, abs=1e-6)
    assert categorical_kl(policy, policy).item() == pytest.approx(0.0, abs=1e-7)


def _episode(obs, rewards, logits, terminated=True):
    return SingleAgentEpisode(
        observations=[np.float32([o]) for o in obs],
        actions=[0] * len(rewards),
        rewards=list(rewards),
        infos=[{} for _ in obs],
        extra_model_outputs={Columns.ACTION_DIST_INPUTS: [np.float32(x) for x in logits]},
        terminated=terminated,
        len_lookback_buffer=0,
    ).to_numpy()


def _prior_from_observation(obs: torch.Tensor) -> torch.Tensor:
    """A stand-in prior: state 0 prefers goal 1 (1/4, 3/4), every other state is uniform."""
    uniform = torch.zeros(len(obs), 2)
    skewed = torch.log(torch.tensor([0.25, 0.75])).expand(len(obs), 2)
    return torch.where(obs[:, :1] == 0, skewed, uniform)


def test_kl_reward_on_a_batch_by_hand():
    half = np.log([0.5, 0.5])
    ep = _episode([0, 1, 2], [1.0, 0.0], [half, np.array([0.0, math.log(3.0)])])
    shared, logger = {}, MetricsLogger()
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=[ep], shared_data=shared)
    RewriteRewards(terms=[PriorKLPenalty(prior_logits=_prior_from_observation, kl_coeff=0.5)])(
        rl_module=None, batch={}, episodes=[ep], shared_data=shared, metrics=logger
    )
    # step 0: policy (1/2,1/2) vs prior (1/4,3/4) in state 0;
    # step 1: policy (1/4,3/4) vs uniform prior in state 1.
    kl0 = 0.5 * math.log(2) + 0.5 * math.log(2 / 3)
    kl1 = 0.25 * math.log(0.5) + 0.75 * math.log(1.5)
    np.testing.assert_allclose(ep.get_rewards(), [1.0 - 0.5 * kl0, -0.5 * kl1, 0.0], atol=1e-6)
    assert logger.peek(PRIOR_KL_MEAN) == pytest.approx((kl0 + kl1) / 2, abs=1e-6)
    # argmax: policy (tie -> 0, 1), prior (1, tie -> 0): agree on neither step
    assert logger.peek(AGREEMENT) == pytest.approx(0.0)


def test_no_kl_leaves_rewards():
    ep = _episode([0, 1], [2.0], [np.log([0.9, 0.1])])
    shared = {}
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=[ep], shared_data=shared)
    RewriteRewards(terms=[PriorKLPenalty(prior_logits=_prior_from_observation, kl_coeff=0.0)])(
        rl_module=None, batch={}, episodes=[ep], shared_data=shared
    )
    np.testing.assert_allclose(ep.get_rewards(), [2.0, 0.0])


class _Counter(gym.Env):
    """Observation = steps taken; reward 1 per step; terminates after ``length`` steps."""

    observation_space = gym.spaces.Box(0, 100, (1,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def __init__(self, length: int):
        self.length, self.t, self.actions = length, 0, []

    def reset(self, *, seed=None, options=None):
        self.t, self.actions = 0, []
        return np.float32([0]), {"caption": "start"}

    def step(self, action):
        self.t += 1
        self.actions.append(int(action))
        return np.float32([self.t]), 1.0, self.t >= self.length, False, {"caption": str(self.t)}


class _Models:
    """Stand-in for PTGMModels: the low-level action is the goal index (so it is visible)."""

    n_goals, obs_dim = 3, 1
    codebook = SimpleNamespace(captions=["goal a", "goal b", "goal c"])

    def low_level_actions(self, obs, goal_ids, *, greedy, rng):
        return np.asarray(goal_ids, np.int64)


def test_high_level_step_runs_the_low_level_policy_k_steps():
    base = _Counter(length=10)
    env = HighLevelGoalEnv(base, _Models(), low_level_steps=4)
    assert env.action_space == gym.spaces.Discrete(3)
    obs, _ = env.reset(seed=0)
    obs, reward, terminated, _, info = env.step(2)
    assert base.actions == [2, 2, 2, 2]  # the goal's low-level policy, 4 env steps
    assert (obs[0], reward, terminated, info["env_steps"], info["goal"]) == (
        4,
        4.0,
        False,
        4,
        "goal c",
    )
    env.step(1)
    obs, reward, terminated, _, info = env.step(0)  # only 2 env steps left in the episode
    assert (obs[0], reward, terminated, info["env_steps"]) == (10, 2.0, True, 2)
    assert info["episode_env_steps"] == 10
    env.reset()
    assert env.step(0)[4]["episode_env_steps"] == 4


def test_high_level_env_rejects_models_of_another_env():
    class Wide(_Counter):
        observation_space = gym.spaces.Box(0, 100, (5,), np.float32)

    with pytest.raises(ValueError, match="rebuild them"):
        HighLevelGoalEnv(Wide(3), _Models(), low_level_steps=2)


def test_results_count_env_steps_not_decisions():
    result = {
        "num_env_steps_sampled_lifetime": 100,
        "env_runners": {
            "num_env_steps_sampled_lifetime": 100,
            LOW_LEVEL_STEPS: 730,
            "episode_len_mean": 12.5,
            EPISODE_ENV_STEPS: 48.0,
        },
    }
    count_env_steps(result)
    assert result["env_runners"]["episode_len_mean"] == 48.0
    assert result[EPISODE_DECISIONS] == 12.5
    assert result["num_env_steps_sampled_lifetime"] == 730
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] == 730
    assert result[HIGH_LEVEL_STEPS] == 100
    flat = {"num_env_steps_sampled_lifetime": 5, "env_runners": {}}
    count_env_steps(flat)  # not a PTGM result: unchanged
    assert flat == {"num_env_steps_sampled_lifetime": 5, "env_runners": {}}
