"""What a method is (:class:`Method`), and what several methods' build functions share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rl_bk.experiments.artifacts import Knowledge
from rl_bk.experiments.task_config import TaskConfig

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

BuildFn = Callable[[TaskConfig, int, Mapping[str, Any]], "AlgorithmConfig"]


class UnknownMethodError(ValueError):
    pass


@dataclass(frozen=True)
class Method:
    """A method, declared once: everything the sweep needs to know about it.

    ``build``: ``(task, seed, params) -> AlgorithmConfig``, ``params`` being the sweep's values
    of the method's ``training(...)`` parameters for one trial. ``knowledge``: the kind its
    trials need built before the sweep, if any. ``labels``: whether a labeler is part of it,
    so that its trials name a ``backend``: ``"offline"`` (its knowledge came from a labeler),
    ``"online"`` (it asks one while training), or None. ``settings``: the task file's section
    that holds its settings, if it has one. ``columns``: metrics it logs about itself that the
    results tables show when a trial has them (the end of the result key). ``appo``: whether
    it also runs on APPO (``algorithm: appo``); its build function then passes its APPO
    config to :func:`~rl_bk.experiments.ppo_config.base_config`.

    Hooks, so that the sweep's code names no method: ``before_sweep(task, params)`` runs once
    per variant after its knowledge is built (bk-pref starts the reward-model app its trials
    score through); ``trial_params(trial_config)`` gives the parameters a trial takes from the
    sweep's options rather than from its variant (rnd's ``precollect_dir``)."""

    name: str
    description: str
    build: BuildFn
    knowledge: Knowledge | None = None
    labels: Literal["offline", "online"] | None = None
    settings: str | None = None
    columns: tuple[str, ...] = ()
    appo: bool = False
    before_sweep: Callable[[TaskConfig, Mapping[str, Any]], None] | None = None
    trial_params: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None


#: Trial parameters that choose the knowledge or the labeler, not ``training(...)`` values:
#: the labeler, BK-Code's candidate, whether the knowledge was told the mission, and whether
#: BK-Pref's Phi is served.
KNOWLEDGE_PARAMS = ("backend", "candidate", "include_mission", "served")


#: The trial parameter that chooses the algorithm (``ppo`` or ``appo``) in place of the task's.
ALGORITHM_PARAM = "algorithm"


def training_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """A trial's parameters that go to ``training(...)``."""
    return {k: v for k, v in params.items() if k not in KNOWLEDGE_PARAMS and k != ALGORITHM_PARAM}


def algorithm_of(task: TaskConfig, params: Mapping[str, Any]) -> str:
    """What a trial trains with: its ``algorithm`` parameter, else the task's."""
    return str(params.get(ALGORITHM_PARAM, task.algorithm))


def knowledge_task(task: TaskConfig, params: Mapping[str, Any]) -> TaskConfig:
    """``task`` with a trial's ``include_mission`` (if it names one) in its knowledge section:
    the goal-aware variant of a task-agnostic task, or the reverse."""
    if "include_mission" not in params:
        return task
    aware = bool(params["include_mission"])
    knowledge = task.knowledge.model_copy(update={"include_mission": aware})
    return task.model_copy(update={"knowledge": knowledge})
