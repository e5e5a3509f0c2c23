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
    """RLlib's PPO on the env reward; with an ``extrinsic_coeff`` parameter, on that multiple
    of it: BK's PPO, which is its ``train_rs.py`` with no potential, on 10 x the env reward
    (so the ``ppo`` row differs from the ``bk-*`` rows only by the shaping)."""
    from rl_bk.experiments.ppo_config import base_ppo_config

    coeff = float(params.get("extrinsic_coeff", 1.0))
    if coeff != 1.0:
        from rl_bk.algorithms.bk_ppo import ShapedPPOConfig

        return base_ppo_config(task, seed, params, config=ShapedPPOConfig())
    return base_ppo_config(task, seed, {k: v for k, v in params.items() if k != "extrinsic_coeff"})


def build_rnd(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    from rl_bk.algorithms.rnd_ppo import RNDPPOConfig
    from rl_bk.experiments.ppo_config import base_ppo_config

    return base_ppo_config(task, seed, params, config=RNDPPOConfig())


METHODS = [
    Method("ppo", "plain PPO on the symbolic observation: the baseline", build_ppo),
    Method("rnd", "PPO with random network distillation (two value heads): the exploration "
           "baseline", build_rnd),
]  # fmt: skip
