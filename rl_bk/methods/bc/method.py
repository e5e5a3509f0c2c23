"""BC-PPO: flat PPO whose policy starts from behaviour cloning on PTGM's dataset, so that PTGM's
lead over it, if any, is the hierarchy's, not the data's. The algorithm is
:mod:`rl_bk.methods.bc`'s; the state-action pairs are a knowledge kind built without a
labeler.

RLlib and the family's classes are imported inside the build functions, so the registry
(and ``tune_run.py --list``) loads these declarations without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rl_bk.experiments.artifacts import Knowledge
from rl_bk.experiments.task_config import TaskConfig
from rl_bk.methods.base import Method, algorithm_of, training_params

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


def _build_bc(task: TaskConfig, labeler, episodes, folder: Path) -> dict:
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.methods.bc.cloning import write_bc_data

    return write_bc_data(episodes, folder)


BC = Knowledge("bc", build=_build_bc, settings=lambda task: {"section": {}}, labelled=False)


def build_bc_ppo(task: TaskConfig, seed: int, params: Mapping[str, Any]) -> AlgorithmConfig:
    # kept light: the registry loads the family on use (module docstring)
    from rl_bk.experiments.ppo_config import base_config
    from rl_bk.methods.bc import BCPPOConfig

    bc = {"bc_dir": str(BC.built(task)), "bc": task.bc, **training_params(params)}
    # No APPO form: the cloned policy starts PPO's learner (BCPPO's algorithm, before the
    # first sample), which APPO's has no hook for here.
    return base_config(
        task,
        seed,
        bc,
        algorithm=algorithm_of(task, params),
        ppo=BCPPOConfig,
        appo=None,
        method="bc-ppo",
    )


METHODS = [
    Method(
        "bc-ppo",
        "flat PPO whose policy starts from behaviour cloning on PTGM's dataset "
        "(PTGM's data without its hierarchy)",
        build_bc_ppo,
        knowledge=BC,
        settings="bc",
        columns=("bc/held_out_accuracy", "bc/held_out_majority_accuracy"),
    ),
]
