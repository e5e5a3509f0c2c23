"""One Tune sweep over methods × their coefficient grids × seeds, for one task.

Methods are different RLlib Algorithm classes (PPO, later RND-PPO, shaped PPO, ...), and a
Tuner takes one trainable; so each trial is a :class:`MethodTrial`, a thin Tune ``Trainable``
that builds its method's Algorithm in ``setup`` and delegates ``step``, checkpointing and
resources to it. That keeps every method of a comparison in one sweep, sharing one
scheduler, one results table and one plot.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from ray import tune
from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.tune.execution.placement_groups import PlacementGroupFactory

import env_registry
from rl_bk.experiments.task_config import (
    ALGORITHMS,
    TaskConfig,
    TaskConfigError,
    with_swept_sections,
)
from rl_bk.methods.base import ALGORITHM_PARAM
from rl_bk.methods.registry import KNOWLEDGE_METHODS, LABELLING_METHODS, get_method


@dataclass(frozen=True)
class Variant:
    """One method with one assignment of its swept parameters."""

    method: str
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        return " ".join([self.method, *(f"{k}={v}" for k, v in self.params)])

    def as_config(self) -> dict[str, Any]:
        return {"method": self.method, "params": dict(self.params)}


def check_sweep_values(
    task: TaskConfig, method: str, section: str | None, grid: Mapping[str, list[Any]]
) -> None:
    """Each swept value passes the checks the task file's own value would: a parameter that
    is a field of the method's settings section (or of ``ppo:``) is validated by that
    section's model with the value in place (a negative coefficient fails here, in one line,
    not in a trial)."""
    models = [getattr(task, name) for name in (section, "ppo") if name]
    for key, values in grid.items():
        if "." in key:  # a field of a task section (``env_runners.num_envs_per_env_runner``)
            for value in values:
                try:
                    with_swept_sections(task, {key: value})
                except TaskConfigError as err:
                    raise TaskConfigError(f"sweep.{method}: {err}") from None
            continue
        model = next((m for m in models if key in type(m).model_fields), None)
        if model is None:
            continue
        for value in values:
            try:
                type(model).model_validate({**model.model_dump(), key: value})
            except ValidationError as err:
                why = err.errors()[0]["msg"]
                raise TaskConfigError(
                    f"sweep.{method}.{key}: {value!r} is not a valid value ({why})"
                ) from None


def expand_variants(task: TaskConfig, methods: list[str]) -> list[Variant]:
    """The cartesian product of each method's sweep grid (one variant if it has none)."""
    variants = []
    for method in methods:
        declared = get_method(method)  # fail early, listing the valid names
        grid = dict(task.sweep.get(method, {}))
        algorithms = grid.get(ALGORITHM_PARAM, [task.algorithm])
        if "appo" in algorithms and not declared.appo:
            raise ValueError(
                f"{method} has no APPO form (docs/methods.md says why); leave it out with "
                f"--methods, or give it `sweep: {{{method}: {{algorithm: [ppo]}}}}`"
            )
        check_sweep_values(task, method, declared.settings, grid)
        unknown = sorted(set(algorithms) - set(ALGORITHMS))
        if unknown:
            raise ValueError(
                f"{method}: unknown algorithm {', '.join(map(str, unknown))}; "
                f"valid: {', '.join(ALGORITHMS)}"
            )
        if method in KNOWLEDGE_METHODS or method in LABELLING_METHODS:
            # Always named, so results say whose knowledge it was (oracle or which LLM).
            grid.setdefault("backend", [task.knowledge.labeler.backend])
        keys = sorted(grid)
        for values in itertools.product(*(grid[k] for k in keys)):
            variants.append(Variant(method, tuple(zip(keys, values))))
    return variants


def build_algorithm_config(task: TaskConfig, trial_config: Mapping[str, Any]) -> AlgorithmConfig:
    variant = trial_config["variant"]
    method = get_method(variant["method"])
    task, params = with_swept_sections(task, variant["params"])
    if method.trial_params is not None:  # from the sweep's options, not in the label
        params.update(method.trial_params(trial_config))
    return method.build(task, int(trial_config["seed"]), params)


class MethodTrial(tune.Trainable):
    """A Tune trial that runs one method's RLlib Algorithm on a task."""

    def setup(self, config: dict[str, Any], task: TaskConfig | None = None) -> None:
        env_registry.register_all()  # registration is per process; this one builds the algo
        assert task is not None, "pass the task with tune.with_parameters(MethodTrial, task=...)"
        self.algo: Algorithm = build_algorithm_config(task, config).build_algo()

    def step(self) -> dict[str, Any]:
        return self.algo.train()

    def save_checkpoint(self, checkpoint_dir: str) -> None:
        self.algo.save_to_path(checkpoint_dir)

    def load_checkpoint(self, checkpoint: str) -> None:
        self.algo.restore_from_path(checkpoint)

    def cleanup(self) -> None:
        self.algo.stop()


def resources_for(task: TaskConfig) -> Callable[[Mapping[str, Any]], PlacementGroupFactory]:
    """Per-trial resources: what the trial's own Algorithm asks for (trial + env runners)."""

    def resources(trial_config: Mapping[str, Any]) -> PlacementGroupFactory:
        algo_config = build_algorithm_config(task, trial_config)
        return algo_config.algo_class.default_resource_request(algo_config)

    return resources


def trainable_for(task: TaskConfig) -> Any:
    """MethodTrial bound to ``task``, with its Algorithm's resources per trial."""
    return tune.with_resources(tune.with_parameters(MethodTrial, task=task), resources_for(task))


def param_space(
    variants: list[Variant], seeds: list[int], precollect_dir: str | None = None
) -> dict[str, Any]:
    space = {
        "variant": tune.grid_search([v.as_config() for v in variants]),
        "seed": tune.grid_search(list(seeds)),
    }
    if precollect_dir:
        space["precollect_dir"] = precollect_dir
    return space


def trial_label(trial_config: Mapping[str, Any]) -> str:
    variant = trial_config["variant"]
    return Variant(variant["method"], tuple(sorted(variant["params"].items()))).label
