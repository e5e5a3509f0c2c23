"""RND-PPO (Burda et al. 2018, "Exploration by Random Network Distillation"): the exploration
baseline.

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


def build_rnd(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.experiments.ppo_config import base_config
    from rl_bk.methods.rnd import RNDPPOConfig

    # No APPO form: its two-headed GAE (extrinsic and intrinsic advantages) has no V-trace
    # counterpart in RLlib's APPO learner.
    return base_config(
        task,
        seed,
        {"rnd": task.rnd, **training_params(params)},  # a swept field replaces its value
        algorithm=algorithm_of(task, params),
        ppo=RNDPPOConfig,
        appo=None,
        method="rnd",
    )


def _precollect(trial_config: Mapping[str, Any]) -> dict[str, Any]:
    """BK's stage 1 (``tune_run.py --precollect``): rnd trials also save stochastic-policy
    episodes."""
    where = trial_config.get("precollect_dir")
    return {"precollect_dir": where} if where else {}


METHODS = [
    Method(
        "rnd",
        "PPO with random network distillation (two value heads): the exploration baseline",
        build_rnd,
        settings="rnd",
        columns=("intrinsic_reward_mean",),  # scaled, as GAE sees it
        trial_params=_precollect,
    ),
]
