"""ONI (Zheng et al. 2024, "Online Intrinsic Rewards for Decision Making Agents from Large
Language Model Feedback") and Motif (Klissarov et al. 2023, "Motif: Intrinsic Motivation from
Artificial Intelligence Feedback"): PPO on an intrinsic reward from LLM feedback on captions,
labelled while training (ONI) or offline into a reward model (Motif, a knowledge kind). RLlib
and the family's classes are imported inside the build functions, so the registry loads these
declarations without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_bk.experiments.artifacts import Knowledge, family_of
from rl_bk.experiments.labelers import labeler_for
from rl_bk.experiments.task_config import TaskConfig
from rl_bk.methods.base import BuildFn, Method, algorithm_of, training_params

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


def _build_motif(task: TaskConfig, labeler, episodes, folder: Path) -> dict:
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.methods.oni.motif import train_motif

    m = task.knowledge.motif
    report = train_motif(
        labeler,
        episodes,
        folder,
        family=family_of(task.env),
        goal=task.oni.goal,
        labels=labeler.identity,
        is_oracle=labeler.is_oracle,
        pairs=m.pairs,
        epochs=m.epochs,
        seed=task.knowledge.dataset.seed,
    )
    return {"report": repr(report)}


def _motif_settings(task: TaskConfig) -> dict[str, Any]:
    # The criterion the pairs are labelled by; format 2 saves the quantiles.
    section = task.knowledge.motif.model_dump(mode="json", exclude={"served"})
    return {"section": section, "goal": task.oni.goal, "format": 2}


MOTIF = Knowledge("motif", build=_build_motif, settings=_motif_settings)


def _oni(reward_type: str) -> BuildFn:
    """An oni-* method (or motif): PPO on ONI's intrinsic reward of ``reward_type``."""

    def build(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
        # kept light: the registry loads the family on use (module docstring)
        from rl_bk.experiments.ppo_config import base_config
        from rl_bk.methods.oni import ONIAPPOConfig, ONIPPOConfig

        training = training_params(params)
        backend = params.get("backend")
        labeler = labeler_for(task, backend, online=True)
        online = {
            "reward_type": reward_type,
            "family": family_of(task.env),
            "labeler": labeler,
            "oni": task.oni,  # whole; a swept field (in training) replaces its value
        }
        if reward_type == "motif":
            online["motif_dir"] = str(MOTIF.built(task, backend))
        return base_config(
            task,
            seed,
            {**online, **training},
            algorithm=algorithm_of(task, params),
            ppo=ONIPPOConfig,
            appo=ONIAPPOConfig,
            method=f"oni ({reward_type})",
        )

    return build


METHODS = [
    Method(
        "oni-none",
        "ONI's extrinsic-only baseline (the env reward scaled as ONI's)",
        _oni("none"),
        settings="oni",
        appo=True,
    ),
    Method(
        "oni-retrieval",
        "PPO on ONI-Retrieval: captions labelled online, a label table",
        _oni("retrieval"),
        labels="online",
        settings="oni",
        appo=True,
    ),
    Method(
        "oni-classification",
        "PPO on ONI-Classification: a classifier fitted online on LLM helpfulness labels",
        _oni("classification"),
        labels="online",
        settings="oni",
        appo=True,
    ),
    Method(
        "oni-ranking",
        "PPO on ONI-Ranking: a Bradley-Terry model fitted online on LLM caption preferences",
        _oni("ranking"),
        labels="online",
        settings="oni",
        appo=True,
    ),
    Method(
        "oni-cosine-bow",
        "PPO on ONI's cosine-BoW baseline: similarity to the goal text",
        _oni("cosine-bow"),
        settings="oni",
        appo=True,
    ),
    Method(
        "motif",
        "PPO on Motif: a reward model trained offline on LLM caption preferences",
        _oni("motif"),
        knowledge=MOTIF,
        labels="offline",
        settings="oni",
        appo=True,
    ),
]
