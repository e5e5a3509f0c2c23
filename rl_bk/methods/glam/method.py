"""GLAM (Carta et al. 2023, "Grounding Large Language Models in Interactive Environments with
Online Reinforcement Learning"): a causal language model is the policy, fine-tuned by PPO. The
algorithm is :mod:`rl_bk.methods.glam`'s; its settings, ``glam:``.

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


def build_glam(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.experiments.ppo_config import base_config
    from rl_bk.methods.glam import GLAMPPOConfig, register_glam_env

    g = task.glam
    # No APPO form: its learner fine-tunes the LLM policy with PPO's own loss and schedule.
    config = base_config(
        task,
        seed,
        {**g.ppo, "glam": g, **training_params(params)},
        algorithm=algorithm_of(task, params),
        ppo=GLAMPPOConfig,
        appo=None,
        method="glam",
    )
    config.learners(num_gpus_per_learner=g.num_gpus_per_learner)
    config.env_runners(num_gpus_per_env_runner=g.num_gpus_per_env_runner)
    env = register_glam_env(task.env, n_obs=g.n_obs, reward_scale=g.reward_scale)
    return config.environment(env, env_config=dict(task.env_config))


METHODS = [
    Method(
        "glam",
        "GLAM: a causal language model is the policy (action texts scored by "
        "likelihood), fine-tuned by PPO",
        build_glam,
        settings="glam",
    ),
]
