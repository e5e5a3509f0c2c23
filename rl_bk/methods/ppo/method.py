"""The baseline every comparison has: plain PPO (or APPO) on the env reward times the task's
``ppo.extrinsic_coeff`` (BK's tasks: BK's PPO, its ``train_rs.py`` with no potential, on
10 x the env reward), so the ``ppo`` row differs from every other row by the method alone.

RLlib is imported inside the build function, so the registry (and ``tune_run.py --list``)
loads this declaration without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rl_bk.experiments.task_config import TaskConfig
from rl_bk.methods.base import Method, algorithm_of, training_params

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


def build_ppo(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    # kept light: the registry loads RLlib on use (module docstring)
    from rl_bk.algorithms.appo.config import BaseAPPOConfig
    from rl_bk.algorithms.ppo.config import BasePPOConfig
    from rl_bk.experiments.ppo_config import base_config

    return base_config(
        task,
        seed,
        training_params(params),
        algorithm=algorithm_of(task, params),
        ppo=BasePPOConfig,
        appo=BaseAPPOConfig,
        method="ppo",
    )


METHODS = [
    Method("ppo", "plain PPO on the symbolic observation: the baseline", build_ppo, appo=True),
]
