"""Count-bonus: PPO plus a count-based exploration bonus over the step captions. The
algorithm is :mod:`rl_bk.methods.count_bonus`'s; its settings, ``count_bonus:``.

RLlib and the family's classes are imported inside the build function, so the registry
(and ``tune_run.py --list``) loads this declaration without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rl_bk.experiments.task_config import TaskConfig
from rl_bk.methods.base import Method, algorithm_of, training_params

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


def build_count_bonus(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.experiments.ppo_config import base_config
    from rl_bk.methods.count_bonus import CountBonusPPOConfig

    training = training_params(params)
    settings = task.count_bonus.take_from(training)  # a sweep's values replace the file's
    return base_config(
        task,
        seed,
        {"count_bonus": settings, **training},
        algorithm=algorithm_of(task, params),
        ppo=CountBonusPPOConfig,
        appo=None,
        method="count-bonus",
    )


METHODS = [
    Method(
        "count-bonus",
        "PPO plus a count-based exploration bonus over the step captions, coeff / sqrt(N)",
        build_count_bonus,
        settings="count_bonus",
        columns=("intrinsic_reward_mean",),  # the bonus per step, as the table shows RND's
    ),
]
