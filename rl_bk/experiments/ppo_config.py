"""A task's PPO setup, which every method builds on: env, model, PPO's hyper-parameters,
runner layout, seed and greedy evaluation. So every method of a task shares them and
comparisons are fair."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import torch
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from rl_bk.algorithms.env_runner import LeanEnvRunner
from rl_bk.algorithms.ppo.config import BasePPOConfig
from rl_bk.algorithms.ppo.grid_conv_module import GridConvAPPOModule, GridConvPPOModule
from rl_bk.callbacks import EpisodeMetricsCallback
from rl_bk.experiments.lockstep_evaluation import LockstepEvaluation
from rl_bk.experiments.task_config import ALGORITHMS, TaskConfig

#: The ``ppo:`` section's settings that mean the same under APPO (its loss is PPO's clipped
#: surrogate on V-trace advantages); the rest (GAE's lambda, the value clip, rl-bk's loss
#: options, the epochs) are PPO's alone, and the ``appo:`` section holds APPO's own.
SHARED_WITH_APPO = (
    "extrinsic_coeff",
    "lr",
    "gamma",
    "clip_param",
    "entropy_coeff",
    "vf_loss_coeff",
    "grad_clip",
    "use_kl_loss",
    "kl_coeff",
    "train_batch_size_per_learner",
    "minibatch_size",
)


class UnsupportedAlgorithmError(ValueError):
    pass


def base_config(
    task: TaskConfig,
    seed: int,
    params: Mapping[str, Any],
    *,
    algorithm: str,
    ppo: type[AlgorithmConfig],
    appo: type[AlgorithmConfig] | None,
    method: str,
) -> AlgorithmConfig:
    """The task's setup on ``algorithm``: ``ppo`` builds on ``ppo()``, ``appo`` on ``appo()``
    (None: the method has no APPO form, and says so)."""
    if algorithm == "ppo":
        return base_ppo_config(task, seed, params, config=ppo())
    if algorithm != "appo":
        raise UnsupportedAlgorithmError(
            f"unknown algorithm {algorithm!r}; valid: {', '.join(ALGORITHMS)}"
        )
    if appo is None:
        raise UnsupportedAlgorithmError(
            f"{method} has no APPO form (docs/methods.md says why): run it with algorithm: ppo"
        )
    return base_appo_config(task, seed, params, config=appo())


def base_ppo_config(
    task: TaskConfig, seed: int, params: Mapping[str, Any], config: PPOConfig | None = None
) -> PPOConfig:
    """The task's PPO setup: env, model, hyper-parameters (then ``params``), runners, seed."""
    config = config or BasePPOConfig()
    config = _shared_setup(config, task, seed).training(**{**task.ppo.model_dump(), **params})
    return with_evaluation(with_network(config, task), task)


def base_appo_config(
    task: TaskConfig, seed: int, params: Mapping[str, Any], config: AlgorithmConfig
) -> AlgorithmConfig:
    """The task's APPO setup: what PPO's is, with the ``ppo:`` settings APPO shares, the
    ``appo:`` section's own, then ``params``. An iteration samples one train batch's env
    steps (RLlib's APPO default is 10 s), so evaluation intervals and per-iteration logs
    mean what they mean under PPO."""
    shared = {k: v for k, v in task.ppo.model_dump().items() if k in SHARED_WITH_APPO}
    training = {**shared, **task.appo.model_dump(), **params}
    batch = int(training["train_batch_size_per_learner"])
    r = task.env_runners
    # One round of every runner's envs is one train batch, as PPO's "auto" fragment makes it.
    fragment = max(1, batch // (max(1, r.num_env_runners) * r.num_envs_per_env_runner))
    config = (
        _shared_setup(config, task, seed)
        .env_runners(rollout_fragment_length=fragment)
        .training(**training)
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=batch)
    )
    return with_evaluation(with_network(config, task, target_network=True), task)


def _shared_setup(config: AlgorithmConfig, task: TaskConfig, seed: int) -> AlgorithmConfig:
    return (
        # Action normalisation off: every rl-bk env is discrete, where it changes nothing
        # (LeanEnvRunner refuses a continuous one).
        config.environment(task.env, env_config=dict(task.env_config), normalize_actions=False)
        .env_runners(env_runner_cls=LeanEnvRunner, **task.env_runners.model_dump())
        # The learner lives in the trial actor: right for 1 CPU or 1 GPU.
        .learners(num_learners=0, num_gpus_per_learner=task.learner.num_gpus)
        .callbacks(
            EpisodeMetricsCallback,
            on_algorithm_init=partial(use_torch_threads, task.learner.threads),
        )
        .debugging(seed=seed)
        .reporting(metrics_num_episodes_for_smoothing=100)
        # An env runner that dies fails its trial, which Tune restarts from its checkpoint
        # (run.py's FailureConfig). RLlib's own restart of the runner alone could not work
        # here: the runner's constructor arguments (the config) live in the object store, so
        # a restarted actor may find them gone, which Ray reports for every runner it creates
        # with restarts on (ray-project/ray#53727).
        .fault_tolerance(restart_failed_env_runners=False)
    )


def with_network(
    config: AlgorithmConfig, task: TaskConfig, *, target_network: bool = False
) -> AlgorithmConfig:
    """The task's policy network: RLlib's default module (an MLP, configured by the task's
    ``model`` fields) or BK's conv network (``model.network: bk-conv``; with
    ``target_network``, its APPO form)."""
    model = task.model.model_dump()
    if model.pop("network") == "bk-conv":
        module = GridConvAPPOModule if target_network else GridConvPPOModule
        return config.rl_module(rl_module_spec=RLModuleSpec(module_class=module))
    return config.rl_module(model_config=DefaultModelConfig(**model))


def learner_threads(config: AlgorithmConfig, threads: int | None = None) -> int:
    """The learner's torch threads: ``threads`` (the task's ``learner.threads``), else one.

    More threads use the CPUs the trial reserves for its env runners, idle while synchronous
    PPO updates: whether that pays depends on the network and the layout (BK's conv network:
    ``bench/results/bk_layout.md``; the MLP tasks: ``bench/results/env_throughput.md``), and
    two threads round the losses differently from one (``bench/results/same_results.md``)."""
    return 1 if threads is None else threads


def use_torch_threads(threads: int | None, *, algorithm, **kwargs) -> None:
    """``on_algorithm_init``: the trial process's torch threads, where its learner updates
    (``OMP_NUM_THREADS=1`` keeps every process at one thread otherwise)."""
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
    e = task.evaluation
    if e.every_env_steps is None:
        return config
    batch = int(config.train_batch_size_per_learner)
    return config.evaluation(
        evaluation_interval=max(1, round(e.every_env_steps / batch)),
        evaluation_duration=e.episodes,
        evaluation_duration_unit="episodes",
        evaluation_num_env_runners=0,
        evaluation_config=AlgorithmConfig.overrides(
            explore=not e.greedy, num_envs_per_env_runner=1
        ),
        custom_evaluation_function=LockstepEvaluation(e.episodes, e.greedy, e.sampled)
        if e.lockstep
        else None,
    )
