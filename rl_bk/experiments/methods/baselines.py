"""The baselines every comparison has: plain PPO, and RND-PPO (Burda et al. 2018,
"Exploration by Random Network Distillation"; :mod:`rl_bk.algorithms.rnd_ppo`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rl_bk.experiments.methods.base import Method, algorithm_of, training_params
from rl_bk.experiments.task_config import TaskConfig

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
    from rl_bk.algorithms.bk_ppo import ShapedAPPOConfig, ShapedPPOConfig

    return base_config(
        task,
        seed,
        training,
        algorithm=algorithm,
        ppo=ShapedPPOConfig,
        appo=ShapedAPPOConfig,
        method="ppo",
    )


def build_rnd(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    from rl_bk.algorithms.rnd_ppo import RNDPPOConfig
    from rl_bk.experiments.ppo_config import base_config

    # No APPO form: its two-headed GAE (extrinsic and intrinsic advantages) has no V-trace
    # counterpart in RLlib's APPO learner.
    return base_config(
        task,
        seed,
        training_params(params),
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
    Method("ppo", "plain PPO on the symbolic observation: the baseline", build_ppo, appo=True),
    Method(
        "rnd",
        "PPO with random network distillation (two value heads): the exploration baseline",
        build_rnd,
        columns=("intrinsic_reward_mean",),  # scaled, as GAE sees it
        trial_params=_precollect,
    ),
]
