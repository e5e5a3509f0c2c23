"""Runs a task's sweep through Tune and writes its results folder (``tune_run.py`` calls this).

Layout of a run folder, ``<output_dir>/<task>/<timestamp>[-smoke]/``:

- ``task.yaml``: the resolved task config the run used (after ``extends``/``--smoke``);
- ``tune/``: Tune's experiment: per-trial ``progress.csv``, ``result.json``, TensorBoard
  event files (``tensorboard --logdir <run>/tune``) and the final checkpoints;
- the tables and plot of :mod:`rl_bk.experiments.results`.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rl_bk import metrics as M
from rl_bk.experiments.results import TrialRecord, write_results
from rl_bk.experiments.sweep import (
    expand_variants,
    param_space,
    resources_for,
    trainable_for,
    trial_label,
)
from rl_bk.experiments.task_config import TaskConfig

logger = logging.getLogger(__name__)


class ResourceError(RuntimeError):
    pass


@dataclass
class RunOptions:
    methods: list[str] | None = None  # None: the task's own list
    num_samples: int | None = None  # seeds per variant; None: the task's seeds
    stop_timesteps: int | None = None  # None: the task's stop criterion
    output_dir: Path = Path("results")
    address: str | None = None  # a running Ray cluster ("auto"); None: start a local one
    wandb: bool = False
    smoke: bool = False
    extra_callbacks: list = field(default_factory=list)


def _seeds(task: TaskConfig, num_samples: int | None) -> list[int]:
    if num_samples is None:
        return list(task.seeds)
    if num_samples < 1:
        raise ValueError("--num-samples must be at least 1")
    extra = [s for s in range(max(task.seeds) + 1, max(task.seeds) + 1 + num_samples)]
    return (list(task.seeds) + extra)[:num_samples]


def _wandb_callback(project: str):
    try:
        from ray.air.integrations.wandb import WandbLoggerCallback
        import wandb  # noqa: F401
    except ImportError:
        from env_registry.errors import MissingDependencyError

        raise MissingDependencyError(
            "--wandb needs the wandb package: pip install 'rl-bk[wandb]' (or drop --wandb)"
        ) from None
    # Without a key, log offline: `wandb sync` uploads later. The key is never written out.
    mode = "online" if os.environ.get("WANDB_API_KEY") else "offline"
    return WandbLoggerCallback(project=project, mode=mode, log_config=True)


def _init_ray(address: str | None) -> None:
    import ray

    if ray.is_initialized():
        return
    common = {"include_dashboard": False, "logging_level": "ERROR", "log_to_driver": True}
    if address:
        ray.init(address=address, **{k: v for k, v in common.items() if k != "include_dashboard"})
    else:
        ray.init(num_cpus=os.cpu_count(), **common)


def _check_fits(task: TaskConfig, first_trial_config: dict) -> None:
    import ray

    bundles = resources_for(task)(first_trial_config).bundles
    need = sum(b.get("CPU", 0.0) for b in bundles)
    have = ray.cluster_resources().get("CPU", 0.0)
    if need > have:
        raise ResourceError(
            f"one trial needs {need:g} CPUs (1 for the trial, "
            f"{task.env_runners.num_cpus_per_env_runner:g} for each of "
            f"{task.env_runners.num_env_runners} env runners) but Ray has {have:g}: lower "
            "env_runners.num_env_runners or num_cpus_per_env_runner in the task file"
        )


def run_experiment(task: TaskConfig, options: RunOptions) -> Path:
    """Runs the sweep and writes the run folder; returns its path."""
    import env_registry
    from ray import tune

    methods = options.methods or list(task.methods)
    variants = expand_variants(task, methods)
    seeds = _seeds(task, options.num_samples)
    stop_steps = options.stop_timesteps or task.stop.num_env_steps

    # Build the env once here: a missing optional package fails now, in one line, not in a worker.
    env_registry.make_env(task.env, task.env_config).close()

    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-smoke" if options.smoke else "")
    run_dir = (options.output_dir / task.name / stamp).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    resolved = task.model_dump(mode="json")
    resolved.update(methods=methods, seeds=seeds, stop={**resolved["stop"], "num_env_steps": stop_steps})
    (run_dir / "task.yaml").write_text(yaml.safe_dump(resolved, sort_keys=False))

    _init_ray(options.address)
    env_registry.register_all()
    trainable = trainable_for(task)
    space = param_space(variants, seeds)
    _check_fits(task, {"variant": variants[0].as_config(), "seed": seeds[0]})

    stop = {M.ENV_STEPS: stop_steps}
    if task.stop.time_budget_s:
        stop["time_total_s"] = task.stop.time_budget_s
    callbacks = list(options.extra_callbacks)
    if options.wandb:
        callbacks.append(_wandb_callback(project=f"rl-bk-{task.name}"))

    reporter = tune.CLIReporter(
        metric_columns={M.ENV_STEPS: "env steps", M.EPISODE_RETURN_MEAN: "return",
                        M.SUCCESS_RATE: "success", "time_total_s": "s"},
        parameter_columns={"seed": "seed"},
        max_report_frequency=30, sort_by_metric=False,
    )  # fmt: skip
    tuner = tune.Tuner(
        trainable,
        param_space=space,
        tune_config=tune.TuneConfig(
            trial_name_creator=lambda t: f"{trial_label(t.config)} seed={t.config['seed']}"
            .replace(" ", "_"),
            trial_dirname_creator=lambda t: f"{t.trial_id}",
        ),
        run_config=tune.RunConfig(
            name="tune",
            storage_path=str(run_dir),
            stop=stop,
            callbacks=callbacks,
            progress_reporter=reporter,
            verbose=1,
            checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True, num_to_keep=1),
        ),
    )
    result_grid = tuner.fit()

    records, errors = [], []
    for result in result_grid:
        if result.error:
            errors.append(f"{trial_label(result.config)} seed={result.config['seed']}: {result.error}")
        df = result.metrics_dataframe
        if df is not None and len(df):
            records.append(TrialRecord(trial_label(result.config), int(result.config["seed"]), df))
    if records:
        write_results(records, run_dir, title=task.name, success_threshold=task.success_threshold)
    for err in errors:
        logger.error("trial failed: %s", err)
    if not records:
        raise RuntimeError(f"no trial reported any result; see {run_dir / 'tune'}")
    return run_dir

