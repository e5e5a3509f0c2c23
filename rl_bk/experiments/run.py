"""Runs a task's sweep through Tune and writes its results folder,
``<output_dir>/<task>/<timestamp>[-smoke]/`` (``tune_run.py`` calls this): knowledge first,
the labeler apps, Tune, then the tables of :mod:`rl_bk.experiments.results`. With the task's
``storage``, Tune's experiment and the knowledge artifacts go there, where trials on any node
write and a resumed run reads, and the tables stay in the local run folder. Details:
docs/running.md#what-a-run-writes, docs/cluster.md.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import ray
import yaml
from ray import tune
from ray.air.integrations.wandb import WandbLoggerCallback

import env_registry
from env_registry.errors import MissingDependencyError
from rl_bk import metrics as M
from rl_bk.console import WORKER_SETUP_HOOK, quiet_ray_logs, verbose
from rl_bk.experiments import labelers
from rl_bk.experiments.artifacts import DONE as BUILT_FILE
from rl_bk.experiments.artifacts import (
    artifact_fingerprint,
    dataset_dir,
    dataset_fingerprint,
    is_built,
    knowledge_root,
)
from rl_bk.experiments.cluster_preflight import check_cluster_paths
from rl_bk.experiments.knowledge_pipeline import build_knowledge, publish_artifact
from rl_bk.experiments.labelers import start_labeler_apps, uses_labeler_app
from rl_bk.experiments.progress import TrialProgress
from rl_bk.experiments.results import (
    DONE,
    ERROR,
    STOPPED_EARLY,
    TrialRecord,
    without_superseded_reports,
    write_results,
)
from rl_bk.experiments.sweep import (
    expand_variants,
    param_space,
    resources_for,
    trainable_for,
    trial_label,
)
from rl_bk.experiments.task_config import TaskConfig, load_task, with_swept_sections
from rl_bk.labeling.store import default_path
from rl_bk.methods.registry import (
    KNOWLEDGE_METHODS,
    KNOWLEDGE_PARAMS,
    LABELLING_METHODS,
    get_method,
    knowledge_task,
)
from rl_bk.storage import is_uri, join

logger = logging.getLogger(__name__)


RESOLVED_TASK_FILE = "task.yaml"


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
    precollect: Path | None = None  # rnd trials also save episodes here (Parquet)
    knowledge_dir: Path | None = None  # where built knowledge lives (with_knowledge_dir)
    extra_callbacks: list = field(default_factory=list)


def _seeds(task: TaskConfig, num_samples: int | None) -> list[int]:
    if num_samples is None:
        return list(task.seeds)
    if num_samples < 1:
        raise ValueError("--num-samples must be at least 1")
    # The task's seeds first, then new ones after the largest: more samples extend a study.
    extra = range(max(task.seeds) + 1, max(task.seeds) + 1 + num_samples)
    return [*task.seeds, *extra][:num_samples]


def _require_wandb() -> None:
    try:
        # optional dependency (wandb: the wandb extra)
        import wandb  # noqa: F401
    except ImportError:
        raise MissingDependencyError(
            "--wandb needs the wandb package: pip install 'rl-bk[wandb]' (or drop --wandb)"
        ) from None


def _wandb_callback(project: str, run_dir: Path):

    # wandb writes straight into the run folder (Tune's copy of its staging folder can race
    # wandb's last flush). Without a key, log offline (`wandb sync <run>/wandb/offline-run-*`
    # uploads later); the key is never written out. Ray's callback checks for a key unless
    # WANDB_MODE says offline, and passes `mode` on to wandb.init in its logging actor.
    kwargs = {"project": project, "log_config": True, "dir": str(run_dir)}
    if not os.environ.get("WANDB_API_KEY"):
        os.environ.setdefault("WANDB_MODE", "offline")
        kwargs["mode"] = os.environ["WANDB_MODE"]
    return WandbLoggerCallback(**kwargs)


def cuda_alloc_conf() -> str:
    """PyTorch's CUDA allocator settings for the run's trials: the user's, else expandable
    segments (see ``init_ray``)."""
    return os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")


def init_ray(address: str | None) -> None:
    """Starts Ray (or attaches to ``address``) with the runtime environment every trial of a
    run gets; a no-op when Ray is already up."""

    if ray.is_initialized():
        return

    quiet_ray_logs()
    common = {"include_dashboard": False, "logging_level": "ERROR", "log_to_driver": True}
    runtime_env: dict = (
        {"env_vars": {"RLBK_VERBOSE": "1"}}
        if verbose()
        else {"worker_process_setup_hook": WORKER_SETUP_HOOK}
    )
    # On a GPU, batches of prompts of varying length fragment PyTorch's caching allocator: a
    # GLAM env runner reserved 77 GiB for 27 GiB of tensors on an H200, more than the share
    # of one GPU it has beside the learner (bench/results/glam_gpu.md). Expandable segments
    # keep what is reserved near what is used. No effect on a CPU; a user's own value wins.
    runtime_env.setdefault("env_vars", {})["PYTORCH_CUDA_ALLOC_CONF"] = cuda_alloc_conf()
    common["runtime_env"] = runtime_env
    if address:
        ray.init(address=address, **{k: v for k, v in common.items() if k != "include_dashboard"})
    else:
        # Without --address a run is this machine's own, even where a `ray start` cluster
        # (or a stale address file) would make a bare ray.init() try to attach.
        ray.init(address="local", num_cpus=os.cpu_count(), **common)


def _check_fits(task: TaskConfig, variants: list, seed: int, address: str | None) -> None:
    """A trial that asks for more than Ray has would wait forever: refuse it now. GPUs are
    checked on this machine alone (no ``address``): a cluster's autoscaler adds GPU nodes
    when a trial asks for one (cluster.yaml starts with none)."""

    have = ray.cluster_resources()
    for variant in variants:
        bundles = resources_for(task)({"variant": variant.as_config(), "seed": seed}).bundles
        _check_bundles_fit(task, variant.label, bundles, have, on_this_machine=address is None)


def _check_bundles_fit(
    task: TaskConfig, label: str, bundles: list[dict], have: dict, on_this_machine: bool
) -> None:
    need = sum(b.get("CPU", 0.0) for b in bundles)
    if need > have.get("CPU", 0.0):
        raise ResourceError(
            f"one trial needs {need:g} CPUs (1 for the trial, "
            f"{task.env_runners.num_cpus_per_env_runner:g} for each of "
            f"{task.env_runners.num_env_runners} env runners) but Ray has "
            f"{have.get('CPU', 0.0):g}: lower env_runners.num_env_runners or "
            "num_cpus_per_env_runner in the task file"
        )
    gpus = sum(b.get("GPU", 0.0) for b in bundles)
    if on_this_machine and gpus > have.get("GPU", 0.0):
        raise ResourceError(
            f"a {label} trial asks for {gpus:g} GPU{'' if gpus == 1 else 's'} but Ray sees "
            f"{have.get('GPU', 0.0):g} on this machine: set learner.num_gpus (and GLAM's "
            "glam.num_gpus_per_*) to 0 in the task file, or run where torch sees a GPU"
        )


def _preflight(task: TaskConfig, variants: list, address: str | None) -> None:
    """Attached to a cluster: the folders trials use must be ones every node sees
    (:mod:`rl_bk.experiments.cluster_preflight`), checked before any build or trial."""
    if not address:
        return

    labels_in_trials = any(
        v.method in LABELLING_METHODS for v in variants
    ) and not uses_labeler_app(task)
    check_cluster_paths(task.storage, str(default_path()) if labels_in_trials else None)


def _callbacks(task: TaskConfig, options: RunOptions, run_dir: Path) -> list:
    callbacks = list(options.extra_callbacks)
    if options.wandb:
        callbacks.append(_wandb_callback(f"rl-bk-{task.name}", run_dir))
    return callbacks


def tune_location(task: TaskConfig, run_dir: Path) -> str:
    """Where Tune keeps the run's experiment: the run folder, or the task's storage."""
    if task.storage is None:
        return str(run_dir / "tune")

    return join(task.storage, "results", task.name, run_dir.name, "tune")


def with_knowledge_dir(task: TaskConfig, knowledge_dir: Path | None = None) -> TaskConfig:
    """The task with the knowledge root every process of the run uses, resolved once and
    written into ``knowledge.dir`` (trials read it there, not from the environment): on a
    shared mount ``<storage>/knowledge`` (every node reads it there, no copies; behind a URI
    artifacts are built locally and published), else ``knowledge_dir`` (``--knowledge-dir``),
    else the task file's, else ``$RLBK_KNOWLEDGE_DIR`` or the default."""

    if task.storage is not None and not is_uri(task.storage):
        root = join(task.storage, "knowledge")
    elif knowledge_dir is not None:
        root = str(Path(knowledge_dir).expanduser().resolve())
    else:
        root = str(knowledge_root(task))
    return task.model_copy(update={"knowledge": task.knowledge.model_copy(update={"dir": root})})


def _tuner_run_config(task: TaskConfig, run_dir: Path, stop_steps: int, callbacks: list):

    stop = {M.ENV_STEPS: stop_steps}
    if task.stop.time_budget_s:
        stop["time_total_s"] = task.stop.time_budget_s

    if verbose():  # Tune's own status table
        reporter, tune_verbosity = (
            tune.CLIReporter(
                metric_columns={
                    M.ENV_STEPS: "env steps",
                    M.EPISODE_RETURN_MEAN: "return",
                    M.SUCCESS_RATE: "success",
                    "time_total_s": "s",
                },
                parameter_columns={"seed": "seed"},
                max_report_frequency=30,
                sort_by_metric=False,
            ),
            1,
        )
    else:  # one line per trial
        reporter, tune_verbosity = None, 0
        main = M.MAIN_METRICS[task.metric]
        callbacks = [*callbacks, TrialProgress(stop_steps, _trial_title, main)]
    return tune.RunConfig(
        name="tune",
        storage_path=tune_location(task, run_dir).rsplit("/", 1)[0],
        stop=stop,
        callbacks=callbacks,
        progress_reporter=reporter,
        verbose=tune_verbosity,
        # A trial that dies (a node lost, an OOM) restarts from its last checkpoint.
        failure_config=tune.FailureConfig(max_failures=2),
        checkpoint_config=tune.CheckpointConfig(
            checkpoint_frequency=task.checkpoint_every, checkpoint_at_end=True, num_to_keep=2
        ),
    )


def _trial_title(trial) -> str:
    return _title(trial.config)


def _title(trial_config: dict) -> str:
    return f"{trial_label(trial_config)} seed={trial_config['seed']}"


def _result_config(result) -> dict:
    """A Tune result's trial config. Tune keeps it with the trial's reports, so a trial that
    failed before its first one (in its setup, say) has none there; the ``params.json`` Tune
    wrote in its folder when it started has it."""
    if result.config:
        return result.config
    with result.filesystem.open_input_stream(f"{result.path}/params.json") as f:
        return json.loads(f.read())


def _trial_name(trial) -> str:
    return _trial_title(trial).replace(" ", "_")


def _prepare_knowledge(task: TaskConfig, variants: list, run_dir: Path) -> None:
    """Builds whatever knowledge the bk-* variants need and is missing (the dataset first),
    and records in ``knowledge.json`` which artifacts the run used and whose labels they hold,
    and whose labels the variants that label while training ask for."""

    used, datasets = {}, {}
    for v in variants:
        knowledge = get_method(v.method).knowledge
        vtask, params = with_swept_sections(task, dict(v.params))  # the variant's task
        if get_method(v.method).labels == "online":  # whose labels it asks for while it trains
            chosen = " ".join(f"{k}={params[k]}" for k in KNOWLEDGE_PARAMS if k in params)
            who, is_oracle = labelers.whose_labels(vtask, params.get("backend"))
            used[f"{v.method} {chosen}".strip()] = {
                "labels": who,
                "is_oracle": is_oracle,
                "asked": "while training",
            }
        if knowledge is None:
            continue
        backend = params.get("backend")
        ktask, kind = knowledge_task(vtask, params), knowledge.kind
        folder = build_knowledge(ktask, kind, backend)
        location = publish_artifact(ktask, kind, backend)  # where trials read it
        chosen = " ".join(f"{k}={params[k]}" for k in KNOWLEDGE_PARAMS if k in params)
        # Fingerprints say whether two runs used the same knowledge: the cache does not
        # travel between machines, and a rebuild from the same settings may differ.
        data = dataset_dir(ktask)
        if is_built(data) and data not in datasets:
            datasets[data] = dataset_fingerprint(data)
        used[f"{v.method} {chosen}".strip()] = {
            "path": location,
            **json.loads((folder / BUILT_FILE).read_text()),
            "fingerprint": artifact_fingerprint(folder),
            "dataset_fingerprint": datasets.get(data),
        }
        if (hook := get_method(v.method).before_sweep) is not None:
            hook(vtask, params)
    if used:
        (run_dir / "knowledge.json").write_text(json.dumps(used, indent=2, sort_keys=True))


def check_labelers(task: TaskConfig, variants: list) -> None:
    """The labelers the sweep's variants use, checked before Ray starts
    (:func:`rl_bk.experiments.labelers.check_labelers`)."""

    needs: dict[str | None, list[str]] = {}  # backend -> the variants that label with it
    for v in variants:
        if v.method in KNOWLEDGE_METHODS or v.method in LABELLING_METHODS:
            backend = dict(v.params).get("backend") or task.knowledge.labeler.backend
            needs.setdefault(backend, []).append(v.label)
    labelers.check_labelers(task, dict(sorted(needs.items())))


def _start_labeler_apps(task: TaskConfig, variants: list) -> None:
    """With ``labeler: {mode: serve}``: the Serve app of every labeler backend the sweep
    uses, started (or found) before any knowledge build or trial needs it."""

    if not uses_labeler_app(task):
        return
    backends = [
        dict(v.params).get("backend")
        for v in variants
        if v.method in KNOWLEDGE_METHODS or v.method in LABELLING_METHODS
    ]
    if backends:
        names = start_labeler_apps(task, backends)
        logger.info("labels from the Serve labeler app(s) %s", ", ".join(names))


def run_experiment(task: TaskConfig, options: RunOptions) -> Path:
    """Runs the sweep and writes the run folder; returns its path."""

    methods = options.methods or list(task.methods)
    variants = expand_variants(task, methods)
    seeds = _seeds(task, options.num_samples)
    stop_steps = options.stop_timesteps or task.stop.num_env_steps

    # Build the env once here: a missing optional package fails now, in one line, not in a worker.
    env_registry.make_env(task.env, task.env_config).close()
    check_labelers(task, variants)
    if options.wandb:
        _require_wandb()

    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-smoke" if options.smoke else "")
    run_dir = (options.output_dir / task.name / stamp).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    # What this run is, resolved: --resume reads it back, and a reader sees every setting.
    resolved = task.model_dump(mode="json")
    resolved.update(methods=methods, seeds=seeds)
    resolved["stop"]["num_env_steps"] = stop_steps
    (run_dir / RESOLVED_TASK_FILE).write_text(yaml.safe_dump(resolved, sort_keys=False))
    callbacks = _callbacks(task, options, run_dir)

    task = with_knowledge_dir(task, options.knowledge_dir)
    init_ray(options.address)
    _preflight(task, variants, options.address)
    env_registry.register_all()
    _start_labeler_apps(task, variants)
    _prepare_knowledge(task, variants, run_dir)
    _check_fits(task, variants, seeds[0], options.address)
    tuner = tune.Tuner(
        trainable_for(task),
        param_space=param_space(
            variants, seeds, str(options.precollect.resolve()) if options.precollect else None
        ),
        tune_config=tune.TuneConfig(
            trial_name_creator=_trial_name, trial_dirname_creator=lambda t: t.trial_id
        ),
        run_config=_tuner_run_config(task, run_dir, stop_steps, callbacks),
    )
    _write(task, tuner.fit(), run_dir, stop_steps)
    return run_dir


def resume_experiment(run_dir: Path, options: RunOptions) -> Path:
    """Continues an interrupted run from its trials' last checkpoints; rewrites its results."""

    run_dir = run_dir.resolve()
    if not (run_dir / RESOLVED_TASK_FILE).is_file():
        raise ValueError(f"{run_dir} is not a run folder of tune_run.py (no task.yaml)")
    task = load_task(run_dir / RESOLVED_TASK_FILE)
    variants = expand_variants(task, list(task.methods))
    check_labelers(task, variants)
    task = with_knowledge_dir(task, options.knowledge_dir)
    init_ray(options.address)
    _preflight(task, variants, options.address)
    env_registry.register_all()
    _start_labeler_apps(task, variants)
    # On another machine, or after the knowledge cache was cleared, the artifacts the trials
    # read are missing: build them again, as a fresh run would.
    _prepare_knowledge(task, variants, run_dir)
    tuner = tune.Tuner.restore(
        tune_location(task, run_dir),
        trainable=trainable_for(task),
        resume_unfinished=True,
        resume_errored=True,
    )
    _write(task, tuner.fit(), run_dir, task.stop.num_env_steps)
    return run_dir


@dataclass(frozen=True)
class FailedTrial:
    """A trial that raised, or ended before its stop condition: what the console says of it."""

    title: str  # "<variant> seed=<seed>"
    status: str  # results.ERROR or results.STOPPED_EARLY
    reason: str  # the error's first line, or how far it got
    details: str  # where the full traceback (or the trial's results) is


class TrialsFailed(RuntimeError):
    """Some trials of a sweep did not finish. The tables are written (their rows marked, their
    numbers in no mean); ``tune_run.py`` prints :meth:`report` and exits non-zero."""

    def __init__(self, run_dir: Path, failed: list[FailedTrial]):
        self.run_dir, self.failed = run_dir, failed
        super().__init__(f"{len(failed)} trial(s) did not finish; results in {run_dir}")

    def report(self) -> str:
        lines = [f"{len(self.failed)} trial(s) did not finish (marked in the tables, in no mean):"]
        for f in self.failed:
            lines.append(f"  {f.status}: {f.title}: {f.reason}\n    {f.details}")
        lines.append(
            f"results: {self.run_dir}; `tune_run.py --resume {self.run_dir}` "
            "runs them again from their last checkpoints"
        )
        return "\n".join(lines)


def _trial_outcome(
    result, stop_steps: int, time_budget_s: float | None = None
) -> tuple[str, FailedTrial | None]:
    """A Tune result's status, and what to say of it when it did not finish: it reached
    ``stop_steps`` env steps (or ran out its time budget), it raised, or it ended before."""

    title = _title(_result_config(result))
    if result.error:
        text = str(result.error).strip()
        first = next((line for line in reversed(text.splitlines()) if line.strip()), text)
        return ERROR, FailedTrial(
            title, ERROR, first.strip()[:300], f"traceback: {result.path}/error.txt"
        )
    metrics = result.metrics or {}
    steps = metrics.get(M.ENV_STEPS, 0) or 0
    out_of_time = time_budget_s and (metrics.get(M.TIME_TOTAL_S) or 0) >= time_budget_s
    if steps < stop_steps and not out_of_time:
        return STOPPED_EARLY, FailedTrial(
            title,
            STOPPED_EARLY,
            f"{steps:,.0f} of {stop_steps:,} env steps",
            f"results: {result.path}",
        )
    return DONE, None


def _write(task: TaskConfig, result_grid, run_dir: Path, stop_steps: int) -> None:
    """Writes the run's tables from Tune's results; raises :class:`TrialsFailed` after
    writing them when any trial raised or ended before its stop condition."""
    records, failed = [], []
    for result in result_grid:
        status, failure = _trial_outcome(result, stop_steps, task.stop.time_budget_s)
        if failure is not None:
            failed.append(failure)
        df = result.metrics_dataframe
        if df is not None and len(df):
            config = _result_config(result)
            records.append(
                TrialRecord(
                    trial_label(config), int(config["seed"]), without_superseded_reports(df), status
                )
            )
    if records:
        main_metric = M.MAIN_METRICS[task.metric]
        threshold = task.success_threshold if main_metric == M.SUCCESS_RATE else None
        # Which algorithm trained them, when it is not the default (a grid's is in each label).
        title = task.name if task.algorithm == "ppo" else f"{task.name} ({task.algorithm.upper()})"
        write_results(
            records,
            run_dir,
            title=title,
            main_metric=main_metric,
            success_threshold=threshold,
            budgets=task.budgets,
        )
    if failed:
        raise TrialsFailed(run_dir, failed)
    if not records:
        raise RuntimeError(f"no trial reported any result; see {run_dir / 'tune'}")
