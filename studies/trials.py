"""A study's trials: the task each part runs, the order its parts run in, running or resuming
one, and what a finished one keeps in the study's results JSON.

A part id is ``<part>/<unit>/<seed>``: one seed of one method (or, with
``one_variant_per_sweep``, of one grid point of a method), run as one ``tune_run.py`` sweep
(``rl_bk.experiments.run``) under a folder of its own. Running the same part again finds it:
a finished run is read, an interrupted one resumes from its trials' checkpoints.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
from pathlib import Path

import pandas as pd

from rl_bk import metrics as M
from rl_bk.experiments.results import (
    DONE,
    TrialRecord,
    achievement_rates,
    display_label,
    records_from_tune_dir,
    smooth_over_episodes,
    trial_row,
)
from rl_bk.experiments.run import RunOptions, TrialsFailed, resume_experiment, run_experiment
from rl_bk.experiments.task_config import TaskConfig, deep_merge, load_task
from studies.plan import Changes, StudyPlan

ROOT = Path(__file__).resolve().parents[1]

#: The per-report columns a finished trial keeps for the study's curves.
CURVE_COLUMNS = (
    M.ENV_STEPS,
    M.EPISODES_LIFETIME,
    M.SUCCESS_RATE,
    M.EPISODE_RETURN_MEAN,
    M.EVAL_SUCCESS_RATE,
    M.EVAL_RETURN_MEAN,
)


def part_task(task_name: str, changes: Changes, smoke: bool = False) -> TaskConfig:
    """The task as the part runs it: the task file with the part's changes (validated as the
    task file's values are) and its env steps and budgets (never under ``smoke``, which
    keeps the smoke settings)."""
    task = load_task(task_name, smoke=smoke)
    update: dict = {}
    if changes.methods is not None:
        update["methods"] = list(changes.methods)
    if changes.sweep:
        update["sweep"] = {**task.sweep, **changes.sweep}
    if changes.seeds is not None:
        update["seeds"] = list(changes.seeds)
    for section, fields in changes.sections.items():
        # Merged into what the task file set, nested fields key by key (as ``extends:``
        # merges), so a field the file left at its default still reads as unset
        # (``knowledge.labeler.n_threads``: unset, an online labeler takes one thread).
        current = getattr(task, section)
        update[section] = type(current).model_validate(
            deep_merge(current.model_dump(exclude_unset=True), fields)
        )
    if changes.steps is not None and not smoke:
        update["stop"] = task.stop.model_copy(update={"num_env_steps": changes.steps})
        update["budgets"] = list(changes.budgets)
    if changes.checkpoint_every is not None:
        update["checkpoint_every"] = changes.checkpoint_every
    return task.model_copy(update=update) if update else task


def plan_tasks(plan: StudyPlan, smoke: bool = False) -> dict[str, TaskConfig]:
    """Each part's task, by part name."""
    return {p.name: part_task(p.task, plan.part_changes(p), smoke) for p in plan.parts}


def sweep_units(task: TaskConfig, split: bool) -> list[tuple[str, str, TaskConfig]]:
    """(unit, method, task) for each sweep a seed runs: one per method (its whole grid at
    once), or with ``split`` one per grid point (``<method>@<k>=<v>,...``), so that each
    variant trains alone and its speed and its labels' latency are its own."""
    units = []
    for method in task.methods:
        grid = task.sweep.get(method, {})
        if not split or not grid:
            units.append((method, method, task))
            continue
        keys = sorted(grid)
        for values in itertools.product(*(grid[k] for k in keys)):
            point = {k: [v] for k, v in zip(keys, values)}
            tag = ",".join(f"{k}={v}" for k, v in zip(keys, values))
            sweep = {**task.sweep, method: point}
            units.append((f"{method}@{tag}", method, task.model_copy(update={"sweep": sweep})))
    return units


Trial = tuple[str, str, TaskConfig]  # (part id, method, the task narrowed to one seed)


def plan_trials(plan: StudyPlan, smoke: bool = False) -> list[Trial]:
    """Every trial of the plan, in the plan's order (each unit's seeds in turn)."""
    out = []
    for name, task in plan_tasks(plan, smoke).items():
        for unit, method, narrowed in sweep_units(task, plan.one_variant_per_sweep):
            for seed in narrowed.seeds:
                seeded = narrowed.model_copy(update={"seeds": [seed]})
                out.append((f"{name}/{unit}/{seed}", method, seeded))
    return out


def run_order(trials: list[Trial], first: list[str], seed_major: bool) -> list[Trial]:
    """The trials in the order they run: ``first``'s methods before the rest; within that,
    the plan's order, or with ``seed_major`` each part's seeds in turn (every method of a
    seed before the next seed: a study cut short still has complete paired seeds)."""
    index = {t[0]: i for i, t in enumerate(trials)}
    part_rank: dict[str, int] = {}
    for part_id, _, _ in trials:
        part_rank.setdefault(part_id.split("/")[0], index[part_id])

    def rank(trial: Trial) -> tuple:
        preferred = first.index(trial[1]) if trial[1] in first else len(first)
        if not seed_major:
            return (preferred, index[trial[0]])
        name, _, seed = trial[0].split("/")
        return (preferred, part_rank[name], int(seed), index[trial[0]])

    return sorted(trials, key=rank)


def is_done(part_id: str, finished: dict) -> bool:
    """A trial is done when it, or the whole-method part it belongs to (studies started
    before parts were per seed kept one part per method), is in ``finished``."""
    return part_id in finished or part_id.rsplit("/", 1)[0] in finished


# ----------------------------------------------------------------- running one trial
def find_run(home: Path) -> Path | None:
    """The newest run folder under ``home`` (``<home>/<task>/<timestamp>/``), if any."""
    runs = sorted(p for p in home.glob("*/*") if (p / "task.yaml").is_file())
    return runs[-1] if runs else None


def is_finished(run_dir: Path | None) -> bool:
    """Whether the run wrote its tables and every trial in them finished."""
    if run_dir is None or not (run_dir / "trials.csv").is_file():
        return False
    trials = pd.read_csv(run_dir / "trials.csv")
    return "status" not in trials or bool((trials["status"] == DONE).all())


def run_or_resume(task: TaskConfig, methods: list[str], home: Path) -> Path:
    """The trial's finished run folder: runs it, resumes it (errored trials again from their
    last checkpoints), or finds it done. A trial that does not finish ends the study's
    command with its report and exit status 1, and is not recorded."""
    run_dir = find_run(home)
    if is_finished(run_dir):
        return run_dir  # type: ignore[return-value]
    try:
        if run_dir is not None and (run_dir / "tune").is_dir():
            return resume_experiment(run_dir, RunOptions())
        options = RunOptions(
            methods=methods, stop_timesteps=task.stop.num_env_steps, output_dir=home
        )
        return run_experiment(task, options)
    except TrialsFailed as failed:
        raise SystemExit(failed.report()) from failed


def code_commit() -> str:
    """The commit the code runs at (``+dirty`` when the code or task files differ from it),
    kept with every finished trial: a study that spans sessions says what ran each one."""

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)

    head = git("rev-parse", "--short", "HEAD")
    if head.returncode != 0:
        return "unknown"
    # What a trial's numbers depend on; the studies' own results change as they run.
    code = ["rl_bk", "env_registry", "serve_deployments", "tune_configs", "studies"]
    dirty = git("diff", "--quiet", "HEAD", "--", *code, ":(exclude)studies/results").returncode
    return head.stdout.strip() + ("+dirty" if dirty != 0 else "")


# ------------------------------------------------------------ what a finished trial keeps
def smoothed_records(run_dir: Path) -> list[TrialRecord]:
    """The trials of a run's Tune folder, labelled for tables, their per-episode metrics
    smoothed over the last 100 episodes, in (label, seed) order."""
    return [
        TrialRecord(
            display_label(r.label),
            r.seed,
            smooth_over_episodes(r.progress),
            status=r.status,
            restored_from=r.restored_from,
        )
        for r in sorted(records_from_tune_dir(run_dir / "tune"), key=lambda r: (r.label, r.seed))
    ]


def trial_curves(records: list[TrialRecord], extra: tuple[str, ...] = ()) -> list[dict]:
    """Each trial's smoothed per-report values of ``CURVE_COLUMNS`` (and ``extra``), as the
    results JSON keeps them: ``{"label", "seed", "progress": {column: [values]},
    "restored_from": [env steps of each checkpoint it was resumed from]}``."""
    out = []
    for record in sorted(records, key=lambda r: r.seed):
        p = record.progress
        cols = [c for c in dict.fromkeys((*CURVE_COLUMNS, *extra)) if c in p]
        progress = {c: [None if math.isnan(v) else float(v) for v in p[c]] for c in cols}
        out.append(
            {
                "label": record.label,
                "seed": record.seed,
                "progress": progress,
                "restored_from": list(record.restored_from),
            }
        )
    return out


def last_values(record: TrialRecord, names: tuple[str, ...]) -> dict[str, float]:
    """Each name's last reported value in a trial, found by the end of its result key (a
    learner's metric sits under a module's path: ``.../intrinsic/labels_received``)."""
    out = {}
    for name in names:
        columns = [c for c in record.progress.columns if c == name or c.endswith("/" + name)]
        values = record.progress[columns[0]].dropna() if columns else ()
        if len(values):
            out[name] = float(values.iloc[-1])
    return out


def finished_trial(task: TaskConfig, run_dir: Path, plan: StudyPlan) -> dict:
    """A finished trial's numbers (the results table's row, with the plan's final columns),
    its per-report curves (with the plan's curves), its Crafter unlock rates and the
    knowledge it used (``knowledge.json``: artifact and dataset fingerprints, whose labels)."""
    main = M.MAIN_METRICS[task.metric]
    threshold = task.success_threshold if main == M.SUCCESS_RATE else None
    records = smoothed_records(run_dir)
    final = tuple(plan.final_columns)
    rows = [
        {**trial_row(r, threshold, main, list(task.budgets)), **last_values(r, final)}
        for r in records
    ]
    rel = run_dir.relative_to(ROOT) if run_dir.is_relative_to(ROOT) else run_dir
    out = {
        "run_dir": str(rel),
        "rows": json.loads(json.dumps(rows, default=float)),
        "curves": trial_curves(records, extra=(main, *plan.curves)),
        "commit": code_commit(),
    }
    rates = {r.label: a for r in records if (a := achievement_rates(r.progress))}
    if rates:
        out["achievements"] = rates
    if (used := run_dir / "knowledge.json").is_file():
        out["knowledge"] = json.loads(used.read_text())
    return out
