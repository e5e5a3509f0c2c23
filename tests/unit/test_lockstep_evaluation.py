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
        self.left -= 1
        self.all_ones &= action == 1
        done = self.left == 0
        return (np.array([self.left], np.float32), float(action), done, False,
                {"success": done and self.all_ones})  # fmt: skip


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
