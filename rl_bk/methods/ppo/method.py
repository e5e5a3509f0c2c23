"""The baseline every comparison has: plain PPO on the env reward (or on a multiple of it, as
BK's PPO).

RLlib and the family's classes are imported inside the build functions, so the registry
(and ``tune_run.py --list``) loads these declarations without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rl_bk.experiments.task_config import TaskConfig
from rl_bk.methods.base import Method, algorithm_of, training_params

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


def build_ppo(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    """RLlib's PPO on the env reward; with an ``extrinsic_coeff`` parameter, on that multiple
    of it: BK's PPO, which is its ``train_rs.py`` with no potential, on 10 x the env reward
    (so the ``ppo`` row differs from the ``bk-*`` rows only by the shaping). On APPO, the
    same baseline asynchronously."""
    from rl_bk.experiments.ppo_config import base_config, base_ppo_config

    algorithm, training = algorithm_of(task, params), training_params(params)
    if float(training.get("extrinsic_coeff", 1.0)) == 1.0 and algorithm == "ppo":
        return base_ppo_config(
            task, seed, {k: v for k, v in training.items() if k != "extrinsic_coeff"}
        )
    from rl_bk.methods.bk import ShapedAPPOConfig, ShapedPPOConfig

    return base_config(
        task,
        seed,
        training,
        algorithm=algorithm,
        ppo=ShapedPPOConfig,
        appo=ShapedAPPOConfig,
        method="ppo",
    )


METHODS = [
    Method("ppo", "plain PPO on the symbolic observation: the baseline", build_ppo, appo=True),
]
