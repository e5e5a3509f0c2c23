"""Lockstep evaluation: every env plays exactly one episode from its own seeded reset, and the
policy is asked only about the envs still playing."""

import gymnasium as gym
import numpy as np

from rl_bk.experiments.lockstep_evaluation import episode_seeds, play_in_lockstep


class Countdown(gym.Env):
    """An episode lasts ``seed % 4 + 1`` steps; reward = the action; success if every action
    was 1. The observation is the steps left."""

    observation_space = gym.spaces.Box(0, 10, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.left, self.all_ones = seed % 4 + 1, True
        return np.array([self.left], np.float32), {}

    def step(self, action):
        assert self.left > 0, "stepped after its episode ended"
        self.left -= 1
        self.all_ones &= action == 1
        done = self.left == 0
        return (
            np.array([self.left], np.float32),
            float(action),
            done,
            False,
            {"success": done and self.all_ones},
        )


def test_each_env_plays_one_whole_episode_and_only_playing_envs_are_asked():
    asked = []

    def act(observations):
        asked.append(len(observations))
        return [1] * len(observations)

    out = play_in_lockstep([Countdown() for _ in range(3)], [0, 3, 5], act)
    assert [e["length"] for e in out] == [1, 4, 2]
    assert [e["return"] for e in out] == [1.0, 4.0, 2.0]
    assert all(e["info"]["success"] for e in out)
    assert asked == [3, 2, 1, 1]  # the 1-step episode leaves after step 1, the 2-step after 2


def test_no_episode_is_dropped_or_repeated_whatever_its_length():
    # Long episodes fail (action 0 at their first step), short ones succeed: RLlib's
    # several-env evaluation would stop after the first N endings and over-count successes.
    def act(observations):
        return [int(o[0] <= 2) for o in observations]

    seeds = list(range(8))
    out = play_in_lockstep([Countdown() for _ in seeds], seeds, act)
    assert len(out) == 8
    assert [e["info"]["success"] for e in out] == [s % 4 + 1 <= 2 for s in seeds]


def test_seeds_are_fixed_by_trial_and_evaluation_and_differ_between_them():
    a = episode_seeds(0, 10, 50)
    assert a == episode_seeds(0, 10, 50) and len(set(a)) == 50
    assert not set(a) & set(episode_seeds(0, 20, 50))
    assert not set(a) & set(episode_seeds(1, 10, 50))


def test_an_episode_cut_by_its_time_limit_keeps_its_last_info():
    class Cut(Countdown):
        def step(self, action):
            obs, reward, done, _, info = super().step(action)
            return obs, reward, False, done, {**info, "achievements": {"collect_wood": 1}}

    out = play_in_lockstep([Cut(), Cut()], [0, 2], lambda observations: [1] * len(observations))
    assert [e["length"] for e in out] == [1, 3]
    assert all(e["info"]["achievements"] == {"collect_wood": 1} for e in out)


class OneChoice(gym.Env):
    """One step: action 1 succeeds, action 0 fails. Records the seed of every reset."""

    observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, resets):
        self.resets = resets

    def reset(self, *, seed=None, options=None):
        self.resets.append(seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, True, False, {"success": int(action) == 1}


class LeansToOne:
    """A stateless RLModule stand-in: logits (0, 0.5) for every observation, so the mode is 1
    and a sample is 0 with probability 0.38."""

    def is_stateful(self):
        return False

    def get_inference_action_dist_cls(self):
        from ray.rllib.models.torch.torch_distributions import TorchCategorical

        return TorchCategorical

    def forward_inference(self, batch):
        import torch
        from ray.rllib.core.columns import Columns

        n = len(batch[Columns.OBS])
        return {Columns.ACTION_DIST_INPUTS: torch.tensor([[0.0, 0.5]] * n)}


def test_greedy_takes_the_mode_and_sampled_replays_the_same_levels_without_touching_torch_rng():
    from types import SimpleNamespace

    import torch
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, EVALUATION_RESULTS
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    from rl_bk.experiments.lockstep_evaluation import LockstepEvaluation

    resets = []
    algorithm = SimpleNamespace(
        config=SimpleNamespace(env_config={}, seed=3),
        iteration=20,
        metrics=MetricsLogger(),
        env_creator=lambda context: OneChoice(resets),
    )
    runners = SimpleNamespace(local_env_runner=SimpleNamespace(module=LeansToOne()))
    torch.manual_seed(0)
    training_rng = torch.get_rng_state()
    _, steps, _ = LockstepEvaluation(50, greedy=True, sampled=True)(algorithm, runners)

    assert torch.equal(torch.get_rng_state(), training_rng)
    assert steps == 100
    assert resets == episode_seeds(3, 20, 50) * 2  # greedy, then sampled on the same levels
    results = algorithm.metrics.peek((EVALUATION_RESULTS, ENV_RUNNER_RESULTS))
    assert results["success_rate"] == 1.0  # argmax is action 1 on every level
    assert 0.3 < results["sampled_success_rate"] < 0.9  # sampled: 1 with probability 0.62
    assert results["num_episodes"] == 100
