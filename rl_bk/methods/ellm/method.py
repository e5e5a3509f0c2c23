"""ELLM (Du et al. 2023, "Guiding Pretraining in Reinforcement Learning with Large Language
Models"): PPO rewarded for achieving goals an LLM suggests for the caption, and its novelty
baseline. The algorithm is :mod:`rl_bk.methods.ellm`'s; its settings, ``ellm:``.

RLlib and the family's classes are imported inside the build functions, so the registry
(and ``tune_run.py --list``) loads these declarations without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rl_bk.experiments.artifacts import family_of
from rl_bk.experiments.labelers import labeler_for
from rl_bk.experiments.task_config import TaskConfig
from rl_bk.methods.base import BuildFn, Method, algorithm_of, training_params

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


def _ellm(suggester: str) -> BuildFn:
    """ELLM (the labeler's goals; with the oracle backend, ELLM's oracle) or its novelty
    baseline (every goal of the vocabulary)."""

    def build(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
        # kept light: the registry loads the family on use (module docstring)
        from rl_bk.experiments.ppo_config import base_config
        from rl_bk.methods.ellm import ELLMAPPOConfig, ELLMPPOConfig

        training = training_params(params)
        settings = task.ellm.take_from(training)
        family = family_of(task.env)
        labeler = labeler_for(task, params.get("backend"), online=True)
        online = {"suggester": suggester, "family": family, "labeler": labeler, "ellm": settings}
        config = base_config(
            task,
            seed,
            {**online, **training},
            algorithm=algorithm_of(task, params),
            ppo=ELLMPPOConfig,
            appo=ELLMAPPOConfig,
            method=f"ellm ({suggester})",
        )
        # The policy sees the embedded suggestions (ELLM's goal-conditioning); the novelty
        # baseline suggests everything, so its policy stays unconditioned.
        if settings.goal_conditioned and suggester == "llm":
            # kept light: the registry loads the family on use (module docstring)
            from rl_bk.methods.ellm.goal_observation import register_goal_conditioned_env
            from rl_bk.methods.ellm.intrinsic_reward import resolve_max_goals

            max_goals = resolve_max_goals(settings.max_goals, labeler)
            env = register_goal_conditioned_env(task.env, labeler, family, max_goals)
            config.environment(env, env_config=dict(task.env_config))
        return config

    return build


METHODS = [
    Method(
        "ellm",
        "PPO on ELLM's reward for achieving goals the LLM suggested for the caption",
        _ellm("llm"),
        labels="online",
        settings="ellm",
        appo=True,
    ),
    Method(
        "ellm-novelty",
        "ELLM's novelty baseline: every goal of the vocabulary, once per episode",
        _ellm("novelty"),
        settings="ellm",
        appo=True,
    ),
]
