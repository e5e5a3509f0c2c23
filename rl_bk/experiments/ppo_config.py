"""A task's PPO setup, which every method builds on: env, model, PPO's hyper-parameters,
runner layout, seed and greedy evaluation. So every method of a task shares them and
comparisons are fair."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.callbacks import EpisodeMetricsCallback
from rl_bk.experiments.task_config import TaskConfig


def base_ppo_config(
    task: TaskConfig, seed: int, params: Mapping[str, Any], config: PPOConfig | None = None
) -> PPOConfig:
    """The task's PPO setup: env, model, hyper-parameters (then ``params``), runners, seed."""
    config = config or BasePPOConfig()
    ppo = {**task.ppo.model_dump(), **params}
    config = (
        config.environment(task.env, env_config=dict(task.env_config))
        .env_runners(**task.env_runners.model_dump())
        .learners(num_learners=0)  # the learner lives in the trial actor: right for 1 CPU/GPU
        .training(**ppo)
        .callbacks(EpisodeMetricsCallback,
                   on_algorithm_init=partial(use_torch_threads, task.learner.threads))
        .debugging(seed=seed)
        .reporting(metrics_num_episodes_for_smoothing=100)
        # An env runner that dies fails its trial, which Tune restarts from its checkpoint
        # (run.py's FailureConfig). RLlib's own restart of the runner alone could not work
        # here: the runner's constructor arguments (the config) live in the object store, so
        # a restarted actor may find them gone, which Ray reports for every runner it creates
        # with restarts on (ray-project/ray#53727).
        .fault_tolerance(restart_failed_env_runners=False)
    )
    return with_evaluation(with_network(config, task), task)


def with_network(config: PPOConfig, task: TaskConfig) -> PPOConfig:
    """The task's policy network: RLlib's default module (an MLP, configured by the task's
    ``model`` fields) or BK's conv network (``model.network: bk-conv``)."""
    model = task.model.model_dump()
    if model.pop("network") == "bk-conv":
        from ray.rllib.core.rl_module.rl_module import RLModuleSpec

        from rl_bk.algorithms.ppo.grid_conv_module import GridConvPPOModule

        return config.rl_module(rl_module_spec=RLModuleSpec(module_class=GridConvPPOModule))
    return config.rl_module(model_config=DefaultModelConfig(**model))


def learner_threads(config: AlgorithmConfig, threads: int | None = None) -> int:
    """The learner's torch threads: ``threads`` (the task's ``learner.threads``), else one.

    More threads could use the CPUs the trial reserves for its env runners, idle while
    synchronous PPO updates; on the BK layout two were no faster, from 1.17x to 0.46x the env
    steps/s of one in seven paired measurements (``bench/env_throughput.py`` keeps a row for
    each), and they round the losses differently (bench/results/same_results.md)."""
    return 1 if threads is None else threads


def use_torch_threads(threads: int | None, *, algorithm, **kwargs) -> None:
    """``on_algorithm_init``: the trial process's torch threads, where its learner updates
    (``OMP_NUM_THREADS=1`` keeps every process at one thread otherwise)."""
    import torch

    torch.set_num_threads(learner_threads(algorithm.config, threads))


def with_evaluation(config: AlgorithmConfig, task: TaskConfig) -> AlgorithmConfig:
    """The task's evaluation (BK: 50 greedy episodes every 20k env steps), if it has one.

    RLlib counts the interval in training iterations; an iteration samples one train batch,
    so the interval is the nearest whole number of batches. It runs in the trial's own
    process, so it takes no CPU beyond the trial's. By default every episode runs on an env
    of its own, all in lockstep (:mod:`rl_bk.experiments.lockstep_evaluation`); with
    ``lockstep: false``, RLlib's own evaluation on one env, episode after episode, as BK's
    ``evaluate`` loops (slower; equally unbiased). Never RLlib's on several envs: it stops
    once enough episodes have ended and drops the ones still running, which are the long
    ones, so successes (short episodes) would be over-counted."""
    from rl_bk.experiments.lockstep_evaluation import LockstepEvaluation

    e = task.evaluation
    if e.every_env_steps is None:
        return config
    batch = int(config.train_batch_size_per_learner)
    return config.evaluation(
        evaluation_interval=max(1, round(e.every_env_steps / batch)),
        evaluation_duration=e.episodes,
        evaluation_duration_unit="episodes",
        evaluation_num_env_runners=0,
        evaluation_config=AlgorithmConfig.overrides(explore=not e.greedy,
                                                    num_envs_per_env_runner=1),
        custom_evaluation_function=LockstepEvaluation(e.episodes, e.greedy, e.sampled)
        if e.lockstep
        else None,
    )  # fmt: skip
