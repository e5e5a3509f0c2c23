"""PTGM's high-level env: one action picks a goal of the codebook, and the frozen low-level
policy pursues it for ``low_level_steps`` env steps, on the env runner. The high-level PPO then
sees an ordinary gymnasium env with ``Discrete(N)`` actions (PTGM's
``hierarchical/high_level_wrapper.py`` does the same around MineDojo), so RLlib's env runners,
connectors and metrics work unchanged. What it reports: :class:`HighLevelGoalEnv`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from ray.tune.registry import register_env

import env_registry
from rl_bk.methods.ptgm.pretraining import PTGMModels
from rl_bk.storage import fetch


@functools.lru_cache(maxsize=4)
def _models(folder: str):
    """One copy of the pre-trained models per process, shared by its vectorised envs (a
    storage URI is fetched to this node first)."""
    return PTGMModels.load(str(fetch(folder)))


class HighLevelGoalEnv(gym.Env):
    """``env`` driven through goals: action ``i`` runs the low-level policy towards code ``i``.

    Args:
        env: the task's env (flat float32 observations, the repo's env contract).
        models: the pre-trained PTGM models
        (:class:`rl_bk.methods.ptgm.pretraining.PTGMModels`).
        low_level_steps: env steps per high-level action (PTGM: 100 in Minecraft).
        greedy: the low-level policy takes its most likely action (False: samples it, as a
            behaviour-cloned policy is meant to be run).

    A high-level step's reward is the sum of the env rewards of its low-level steps; the KL
    term to the goal prior is added in the learner (:mod:`rl_bk.methods.ptgm.prior_kl`), where
    the policy's logits are. The low-level policy is a small MLP, one forward pass per env
    step, no LLM and no Serve call. ``info["env_steps"]`` says how many env steps a high-level
    step took (fewer than ``low_level_steps`` when the episode ended), so env steps, not
    decisions, are what the results count (:mod:`rl_bk.methods.ptgm.env_steps`);
    ``info["episode_env_steps"]`` is the episode's length so far in env steps, and
    ``info["goal"]`` the caption of the goal's codebook sample.
    """

    def __init__(
        self,
        env: gym.Env,
        models: Any,
        low_level_steps: int,
        *,
        greedy: bool = False,
        seed: int | None = None,
    ):
        if low_level_steps < 1:
            raise ValueError(f"low_level_steps must be >= 1, got {low_level_steps}")
        if env.observation_space.shape != (models.obs_dim,):
            raise ValueError(
                f"the PTGM models were trained on observations of size "
                f"{models.obs_dim}, the env gives {env.observation_space.shape}: "
                "rebuild them on this env's dataset"
            )
        self.env, self.models, self.k, self.greedy = env, models, low_level_steps, greedy
        self.observation_space = env.observation_space
        self.action_space = gym.spaces.Discrete(models.n_goals)
        self._rng = np.random.default_rng(seed)
        self._obs: np.ndarray | None = None
        self._episode_steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        obs, info = self.env.reset(seed=seed, options=options)
        self._obs = np.asarray(obs, np.float32)
        self._episode_steps = 0
        return self._obs, info

    def step(self, action: Any):
        goal = np.asarray([int(action)])
        total, steps = 0.0, 0
        terminated = truncated = False
        info: dict = {}
        while steps < self.k and not (terminated or truncated):
            low = self.models.low_level_actions(
                self._obs[None], goal, greedy=self.greedy, rng=self._rng
            )
            obs, reward, terminated, truncated, info = self.env.step(int(low[0]))
            self._obs = np.asarray(obs, np.float32)
            total += float(reward)
            steps += 1
        info = dict(info)
        self._episode_steps += steps
        info["env_steps"], info["episode_env_steps"] = steps, self._episode_steps
        info["goal"] = self.models.codebook.captions[int(action)]
        return self._obs, total, terminated, truncated, info

    def render(self):
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def make_high_level_env(env_config: Mapping[str, Any]) -> HighLevelGoalEnv:
    """The ``<env>+ptgm`` creator: ``env_config`` is the task's, plus ``ptgm_env`` (the
    base env's name), ``ptgm_dir`` (the built models) and ``low_level_steps``."""
    config = dict(env_config)
    base, folder = config.pop("ptgm_env"), config.pop("ptgm_dir")
    k, greedy = int(config.pop("low_level_steps")), bool(config.pop("greedy_low_level", False))
    runner = getattr(env_config, "worker_index", 0)
    seed = runner * 1000 + getattr(env_config, "vector_index", 0)
    low_level = env_registry.make_runner_env(base, config, runner)
    return HighLevelGoalEnv(low_level, _models(folder), k, greedy=greedy, seed=seed)


def register_high_level_env(env: str) -> str:
    """Registers ``<env>+ptgm`` with RLlib and returns the name; the trial's env_config says
    which models and how many low-level steps (:func:`make_high_level_env`)."""
    name = f"{env}+ptgm"
    register_env(name, make_high_level_env)
    return name
