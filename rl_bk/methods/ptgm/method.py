"""PTGM (Yuan et al. 2024, "Pre-Training Goal-based Models for Sample-Efficient Reinforcement
Learning"): a high-level PPO over goals pre-trained from the dataset (a knowledge kind, built
without a labeler), with or without the goal prior's KL term. The algorithm is
:mod:`rl_bk.methods.ptgm`'s; its settings, ``ptgm:``.

RLlib and the family's classes are imported inside the build functions, so the registry
(and ``tune_run.py --list``) loads these declarations without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_bk.experiments.artifacts import Knowledge
from rl_bk.experiments.task_config import TaskConfig
from rl_bk.methods.base import BuildFn, Method, algorithm_of, training_params

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


def _build_ptgm(task: TaskConfig, labeler, episodes, folder: Path) -> dict:
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.methods.ptgm.pretraining import build_ptgm

    p = task.ptgm
    report = build_ptgm(
        episodes,
        folder,
        n_goals=p.n_goals,
        embedding=p.embedding,
        low_level_gap=tuple(p.low_level_gap),
        prior_gap=tuple(p.prior_gap),
        epochs=p.epochs,
        prior_sees_code=p.prior_sees_code,
        seed=task.knowledge.dataset.seed,
    )
    return {"report": repr(report)[:4000]}


PTGM = Knowledge(
    "ptgm",
    build=_build_ptgm,
    settings=lambda task: {"section": task.ptgm.pretraining()},
    labelled=False,
)


def _ptgm(prior_kl: bool) -> BuildFn:
    """PTGM's high-level PPO over the task's pre-trained goals, with or without the KL term."""

    def build(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
        # kept light: the registry loads the family on use (module docstring)
        from rl_bk.experiments.ppo_config import base_config
        from rl_bk.methods.ptgm import PTGMAPPOConfig, PTGMPPOConfig

        p = task.ptgm
        training = {
            **p.high_level_ppo,
            "ptgm_dir": str(PTGM.built(task)),
            "ptgm": p,  # a swept field (in the trial's parameters) replaces its value
            **training_params(params),
        }
        if not prior_kl:
            training["prior_kl_coeff"] = 0.0
        config = base_config(
            task,
            seed,
            training,
            algorithm=algorithm_of(task, params),
            ppo=PTGMPPOConfig,
            appo=PTGMAPPOConfig,
            method="ptgm",
        )
        return config.goal_environment(task.env, dict(task.env_config))

    return build


#: The KL term's size and its share of the reward (RLlib puts them under learners/<module>/).
COLUMNS = ("ptgm/prior_kl_mean", "ptgm/kl_reward_mean")

METHODS = [
    Method(
        "ptgm",
        "PTGM: a high-level PPO picks pre-trained goals, a frozen goal-conditioned "
        "policy pursues each; KL to the goal prior",
        _ptgm(prior_kl=True),
        knowledge=PTGM,
        settings="ptgm",
        columns=COLUMNS,
        appo=True,
    ),
    Method(
        "ptgm-no-kl",
        "PTGM without the goal prior's KL term (its ablation)",
        _ptgm(False),
        knowledge=PTGM,
        settings="ptgm",
        columns=COLUMNS,
        appo=True,
    ),
]
