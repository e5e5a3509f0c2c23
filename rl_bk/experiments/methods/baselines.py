"""The baselines every comparison has: plain PPO, and RND-PPO (Burda et al. 2018,
"Exploration by Random Network Distillation"; :mod:`rl_bk.algorithms.rnd_ppo`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rl_bk.experiments.methods.base import Method
from rl_bk.experiments.task_config import TaskConfig

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


def build_ppo(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    from rl_bk.experiments.ppo_config import base_ppo_config

    return base_ppo_config(task, seed, params)


def build_rnd(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    from rl_bk.algorithms.rnd_ppo import RNDPPOConfig
    from rl_bk.experiments.ppo_config import base_ppo_config

    return base_ppo_config(task, seed, params, config=RNDPPOConfig())


METHODS = [
    Method("ppo", "plain PPO on the symbolic observation: the baseline", build_ppo),
    Method("rnd", "PPO with random network distillation (two value heads): the exploration "
           "baseline", build_rnd),
]  # fmt: skip
