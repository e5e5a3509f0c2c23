"""LeanEnvRunner's vector env hands each env's info dict over as the env returned it: the same
dicts RLlib's DictInfoToList rebuilds from gymnasium's merged arrays, resets and the
next-step autoreset included."""

import gymnasium as gym
import numpy as np
from gymnasium.vector import SyncVectorEnv
from gymnasium.wrappers.vector import DictInfoToList

from rl_bk.algorithms.env_runner import _ListInfosAsTheyAre, _ListInfoSyncVectorEnv


class _Counting(gym.Env):
    """Ends after ``length`` steps; its infos carry an int, a str and a bool, and a key that
    only some steps have."""

    observation_space = gym.spaces.Box(0.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length: int):
        self.length, self.t = length, 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(1, np.float32), {"t": 0, "caption": "start", "reset": True}

    def step(self, action):
        self.t += 1
        info = {"t": self.t, "caption": f"step {self.t} action {int(action)}"}
        if self.t % 2:
            info["odd"] = True
        done = self.t >= self.length
        return np.full(1, self.t, np.float32), float(action), done, False, info


def _vector(lean: bool):
    env = DictInfoToList(SyncVectorEnv([lambda: _Counting(2), lambda: _Counting(3)]))
    if lean:
        env.env.__class__ = _ListInfoSyncVectorEnv
        env.__class__ = _ListInfosAsTheyAre
    return env


def test_the_infos_are_the_dicts_rllibs_wrapper_rebuilds():
    rllib, lean = _vector(lean=False), _vector(lean=True)
    pairs = [(rllib.reset(seed=0)[1], lean.reset(seed=0)[1])]
    for step in range(7):  # both envs end and are reset on their next step
        actions = np.array([step % 2, 1])
        pairs.append((rllib.step(actions)[-1], lean.step(actions)[-1]))
    for expected, got in pairs:
        assert isinstance(got, list) and len(got) == 2
        assert got == expected  # numpy scalars on RLlib's side compare equal by value
    assert {"reset": True, "t": 0, "caption": "start"} in [g for _, gs in pairs for g in gs]
    assert type(pairs[1][1][0]["t"]) is int  # the env's own value, not a numpy scalar
