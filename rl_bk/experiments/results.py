"""What a run leaves behind: ``trials.csv`` (one row per trial), ``summary.csv`` and
``summary.md`` (one row per variant: mean and standard deviation over seeds, then each variant
against the task's first method), ``learning_curves.png`` and ``curves.csv``. Variants whose
knowledge or labels came from the rule-based oracle say so in every table and legend:
``(ORACLE)``, or ``(GOAL-AWARE ORACLE)``. Details: docs/running.md#what-a-run-writes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rl_bk import metrics as M
from rl_bk.experiments.measures import interval_text, paired_difference, signed
from rl_bk.methods.registry import METHODS

#: Plot title of each main metric (``metric:`` of a task); the plot shows the episode return
#: and, beside it, the task's main metric.
CURVE_NAMES = {
    M.EPISODE_RETURN_MEAN: "episode return",
    M.SUCCESS_RATE: "success rate",
    M.ACHIEVEMENTS_PER_EPISODE: "achievements per episode",
    M.GAME_SCORE_MEAN: "game score",
}


def curve_metrics(main_metric: str, records: Iterable[TrialRecord] = ()) -> dict[str, str]:
    """Plot title -> result key: the episode return, then the main metric if different, then
    the greedy evaluation's success when a success task was evaluated."""
    keys = dict.fromkeys([M.EPISODE_RETURN_MEAN, main_metric])
    curves = {CURVE_NAMES.get(k, k): k for k in keys}
    if main_metric == M.SUCCESS_RATE and any(M.EVAL_SUCCESS_RATE in r.progress for r in records):
        curves["greedy success rate (evaluation)"] = M.EVAL_SUCCESS_RATE
    return curves


def whose_knowledge(run_dir: Path) -> str:
    """A paragraph naming whose labels each knowledge variant holds, from the run's
    ``knowledge.json``: the oracle, or the model (backend/file@sha256 prefix). Empty without."""
    path = run_dir / "knowledge.json"
    if not path.is_file():
        return ""
    lines = []
    for variant, facts in sorted(json.loads(path.read_text()).items()):
        labels = facts.get("labels") or "unknown"
        if facts.get("is_oracle"):
            who = "ORACLE (rules, not an LLM)"
        elif str(labels).startswith("hand-written"):
            who = f"`{labels}` (no labeller)"
        else:
            who = f"LLM `{labels}`"
        lines.append(f"- `{variant}`: {who}")
    return "Whose knowledge or labels each variant used:\n\n" + "\n".join(lines) + "\n\n"


def display_label(variant: str) -> str:
    """The variant as tables show it: oracle knowledge is marked (see the module)."""
    if "backend=oracle" not in variant.split():
        return variant
    aware = "include_mission=True" in variant.split()
    return f"{variant} ({'GOAL-AWARE ORACLE' if aware else 'ORACLE'})"


#: Per-episode means that :func:`smooth_over_episodes` turns into last-100-episode means.
SMOOTHED = (
    M.SUCCESS_RATE,
    M.EPISODE_RETURN_MEAN,
    M.EPISODE_LEN_MEAN,
    M.ACHIEVEMENTS_PER_EPISODE,
    M.GAME_SCORE_MEAN,
)


#: A trial's status in the tables: it reached its stop condition, it raised, or it ended
#: (was stopped) before its stop condition without an error.
DONE, ERROR, STOPPED_EARLY = "done", "ERROR", "stopped early"


@dataclass
class TrialRecord:
    label: str  # the variant: method and swept parameters
    seed: int
    progress: pd.DataFrame  # one row per training iteration, flattened result keys
    status: str = DONE  # DONE, ERROR or STOPPED_EARLY: only DONE trials enter the means
    restored_from: tuple[float, ...] = ()  # env steps of each checkpoint it was restored from


def smooth_over_episodes(
    progress: pd.DataFrame, window: int = M.SMOOTHING_EPISODES
) -> pd.DataFrame:
    """Per-episode metrics as means over (at least) the last ``window`` episodes, and each
    evaluation's values only where it ran (:func:`fresh_evaluations`).

    RLlib 2.60's env runners clear their episode metrics at every report, so a reported
    ``success_rate`` or ``episode_return_mean`` is the mean over the episodes that ended in
    that iteration only (6-12 on BabyAI S20), whatever ``metrics_num_episodes_for_smoothing``
    says. Each report is replaced by the episode-weighted mean of the latest reports that
    together hold ``window`` episodes (whole iterations, so slightly more), as
    ``env_runners/num_episodes`` counts them.
    """
    progress = fresh_evaluations(progress)
    if M.EPISODES_THIS_ITER not in progress:
        return progress
    columns = [c for c in progress.columns if c in SMOOTHED or c.startswith(M.ACHIEVEMENT_PREFIX)]
    counts = progress[M.EPISODES_THIS_ITER].fillna(0).to_numpy(dtype=float)
    out = progress.copy()
    for col in columns:
        values = progress[col].to_numpy(dtype=float)
        smoothed = np.full(len(values), np.nan)
        for i in range(len(values)):
            total = weight = 0.0
            for j in range(i, -1, -1):
                if counts[j] > 0 and not np.isnan(values[j]):
                    total += values[j] * counts[j]
                    weight += counts[j]
                if weight >= window:
                    break
            smoothed[i] = total / weight if weight else np.nan
        out[col] = smoothed
    return out


def without_superseded_reports(progress: pd.DataFrame) -> pd.DataFrame:
    """A trial's reports along the branch its weights went on to train.

    A trial restored from a checkpoint (a run resumed after a stop) trains again from the
    checkpoint's iteration, and Tune appends the new reports after the ones the first run had
    already written, so the first run's reports past the checkpoint come twice (a curve that
    jumps back in env steps). Those reports belong to weights the trial threw away; each
    iteration keeps its last report, and any earlier report of a later iteration goes. Ordered
    by ``training_iteration``, or by env steps where a table has no iteration column (a stored
    curve).
    """
    key = "training_iteration" if "training_iteration" in progress else M.ENV_STEPS
    if key not in progress or len(progress) < 2:
        return progress
    order = progress[key].to_numpy(dtype=float)
    # keep a report only if every later report is of a later iteration
    filled = np.where(np.isnan(order), np.inf, order)  # a report without one is kept
    suffix_min = np.minimum.accumulate(filled[::-1])[::-1]  # min of this report and later
    later_min = np.append(suffix_min[1:], np.inf)
    if key == M.ENV_STEPS:
        # Without iterations, a report less than half a report's env steps before a later one
        # is that same iteration, first reported on the branch the resume threw away.
        step = np.diff(filled[np.isfinite(filled)])
        later_min = later_min - (np.median(step[step > 0]) / 2 if (step > 0).any() else 0.0)
    keep = np.isnan(order) | (order < later_min)
    return progress if keep.all() else progress[keep].reset_index(drop=True)


def restore_points(progress: pd.DataFrame) -> list[float]:
    """The env steps of each checkpoint a trial was restored from (a run resumed after a stop,
    or Tune's restore after a failure), in order. Tune counts ``iterations_since_restore``
    from 1 again after a restore, so a report with 1 there and a later ``training_iteration``
    is the first after a restore from the iteration before it. Empty for a trial that ran in
    one go, or for a table without those columns (a stored curve)."""
    columns = ("iterations_since_restore", "training_iteration", M.ENV_STEPS)
    if any(c not in progress for c in columns):
        return []
    iteration = progress["training_iteration"].to_numpy(dtype=float)
    steps_at = dict(zip(iteration, progress[M.ENV_STEPS].to_numpy(dtype=float)))
    since = progress["iterations_since_restore"].to_numpy(dtype=float)
    return [
        float(steps_at.get(i - 1, math.nan)) for n, i in zip(since, iteration) if n == 1 and i > 1
    ]


def fresh_evaluations(progress: pd.DataFrame) -> pd.DataFrame:
    """The evaluation columns only in the reports of iterations that evaluated.

    RLlib 2.60 repeats the last evaluation's values in every later report until the next
    one; our callback marks the fresh ones (``evaluation/trained_env_steps``), and the others
    are blanked, so curves and "first report at 0.9" count each evaluation once."""
    if M.EVAL_TRAINED_ENV_STEPS not in progress:
        return progress
    stale = progress[M.EVAL_TRAINED_ENV_STEPS].isna()
    out = progress.copy()
    columns = [c for c in out.columns if c.startswith(M.EVAL_PREFIX)]
    out.loc[stale, columns] = np.nan
    return out


def records_from_tune_dir(tune_dir: Path) -> list[TrialRecord]:
    """The trials of a Tune experiment folder, read from each trial's ``params.json`` and
    ``result.json`` (all its reports): tables for a run that was stopped before Tune could
    return, e.g. to keep its finished trials."""
    # kept light: reading results (studies/report.py) needs no Ray; the sweep module loads it
    from rl_bk.experiments.sweep import trial_label

    records = []
    for trial in sorted(p for p in Path(tune_dir).iterdir() if (p / "result.json").is_file()):
        config = json.loads((trial / "params.json").read_text())
        lines = (trial / "result.json").read_text().splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        if rows:
            progress = without_superseded_reports(pd.json_normalize(rows, sep="/"))
            records.append(
                TrialRecord(
                    trial_label(config),
                    int(config["seed"]),
                    progress,
                    restored_from=tuple(restore_points(progress)),
                )
            )
    return records


def steps_to_reach(
    progress: pd.DataFrame, column: str, threshold: float, min_episodes: int = M.SMOOTHING_EPISODES
) -> float:
    """Env steps at the first report where ``column`` ≥ threshold, counted only once
    ``min_episodes`` episodes have ended (a full smoothing window); NaN if never."""
    if column not in progress or M.ENV_STEPS not in progress:
        return math.nan
    ok = progress[column] >= threshold
    if M.EPISODES_LIFETIME in progress:
        ok &= progress[M.EPISODES_LIFETIME].fillna(0) >= min_episodes
    reached = progress[ok]
    return float(reached[M.ENV_STEPS].iloc[0]) if len(reached) else math.nan


def crafter_score(achievement_rates: Iterable[float]) -> float:
    """Crafter's score (Hafner 2021): exp(mean(ln(1 + 100·rate))) − 1, in percent."""
    rates = np.asarray(list(achievement_rates), dtype=float)
    if rates.size == 0:
        return math.nan
    return float(np.exp(np.mean(np.log1p(100.0 * rates))) - 1.0)


def achievement_rates(progress: pd.DataFrame) -> dict[str, float]:
    """Each Crafter achievement's share of episodes that unlock it, at the last report
    (``{"collect_wood": 0.97, ...}``); empty for envs without achievements."""
    prefix = M.ACHIEVEMENT_PREFIX
    return {c[len(prefix) :]: _last(progress, c) for c in progress.columns if c.startswith(prefix)}


def _last(progress: pd.DataFrame, column: str) -> float:
    if column not in progress:
        return math.nan
    values = progress[column].dropna()
    return float(values.iloc[-1]) if len(values) else math.nan


def value_at(progress: pd.DataFrame, column: str, budget: int) -> float:
    """``column`` at the last report within ``budget`` env steps; NaN if the trial stopped
    before the budget (a shorter run says nothing about it) or had no value yet."""
    if column not in progress or M.ENV_STEPS not in progress:
        return math.nan
    if progress[M.ENV_STEPS].max() < budget:
        return math.nan
    values = progress[progress[M.ENV_STEPS] <= budget][column].dropna()
    return float(values.iloc[-1]) if len(values) else math.nan


#: Metrics a method logs about itself (its declaration's ``columns``), shown when a trial has
#: them (the column name ends so; RLlib puts learner metrics under ``learners/<module>/``).
LEARNER_COLUMNS = tuple(dict.fromkeys(c for m in METHODS.values() for c in m.columns))


def trial_row(
    record: TrialRecord,
    success_threshold: float | None,
    main_metric: str | None = None,
    budgets: Iterable[int] = (),
) -> dict[str, object]:
    """Final metrics of one trial; ``success_threshold`` None leaves out success columns;
    ``budgets`` add the main metric at each of those env-step budgets."""
    p = record.progress
    steps, seconds = _last(p, M.ENV_STEPS), _last(p, M.TIME_TOTAL_S)
    row: dict[str, object] = {
        "variant": record.label,
        "seed": record.seed,
        "status": record.status,
        "env_steps": steps,
        "env_steps_per_s": steps / seconds if seconds and seconds > 0 else math.nan,
        "episode_return_mean": _last(p, M.EPISODE_RETURN_MEAN),
        "episode_len_mean": _last(p, M.EPISODE_LEN_MEAN),
    }
    if success_threshold is not None:
        row["success_rate"] = _last(p, M.SUCCESS_RATE)
        row[f"steps_to_success_{success_threshold:g}"] = steps_to_reach(
            p, M.SUCCESS_RATE, success_threshold
        )
        if M.EVAL_SUCCESS_RATE in p:  # greedy evaluation: each value averages its episodes
            row["eval_success_rate"] = _last(p, M.EVAL_SUCCESS_RATE)
            # The normalised area under the greedy curve: the mean over every evaluation.
            row["eval_success_auc"] = float(p[M.EVAL_SUCCESS_RATE].dropna().mean())
            if M.EVAL_SAMPLED_SUCCESS_RATE in p:
                row["eval_sampled_success_rate"] = _last(p, M.EVAL_SAMPLED_SUCCESS_RATE)
            row["eval_return_mean"] = _last(p, M.EVAL_RETURN_MEAN)
            row[f"eval_steps_to_success_{success_threshold:g}"] = steps_to_reach(
                p, M.EVAL_SUCCESS_RATE, success_threshold, min_episodes=0
            )
    rates = achievement_rates(p)
    if rates:
        row["achievements_per_episode"] = _last(p, M.ACHIEVEMENTS_PER_EPISODE)
        row["crafter_score"] = crafter_score(rates.values())
    if M.GAME_SCORE_MEAN in p:
        row["game_score_mean"] = _last(p, M.GAME_SCORE_MEAN)
    for suffix in LEARNER_COLUMNS:  # PTGM's KL term, BC-PPO's starting policy
        col = next((c for c in p.columns if c.endswith(suffix)), None)
        if col is not None:
            row[suffix.replace("/", "_")] = _last(p, col)
    main = main_metric or M.SUCCESS_RATE
    name = main.split("/")[-1]
    if main in p:  # the normalised area under the training curve: the mean over every report
        row[f"{name}_auc"] = float(p[main].dropna().mean())
    for budget in budgets:
        row[f"{name}_at_{budget_label(budget)}"] = value_at(
            p, main_metric or M.SUCCESS_RATE, budget
        )
    if success_threshold is not None and M.EVAL_SUCCESS_RATE in p:
        for budget in budgets:
            row[f"eval_success_rate_at_{budget_label(budget)}"] = value_at(
                p, M.EVAL_SUCCESS_RATE, budget
            )
    return row


def budget_label(steps: int) -> str:
    """``100k`` for 100,000 env steps; small budgets (GLAM's) as they are: ``256``."""
    return f"{steps // 1000}k" if steps >= 1000 else str(steps)


def summarize(trials: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds per variant; ``reached`` counts seeds that hit the threshold.
    Only finished trials (status ``done``) count: ``seeds`` is how many finished, and a
    trial that errored or stopped early is in no mean."""
    if "status" in trials:
        trials = trials[trials["status"] == DONE]
    numeric = [c for c in trials.columns if c not in ("variant", "seed", "status")]
    grouped = trials.groupby("variant", sort=False)
    summary = grouped[numeric].agg(["mean", "std"])
    summary.columns = [f"{col}_{stat}" for col, stat in summary.columns]
    summary.insert(0, "seeds", grouped.size())
    for col in numeric:
        if "steps_to_success" in col:
            summary[f"{col}_reached"] = grouped[col].apply(lambda s: int(s.notna().sum()))
    return summary.reset_index()


def paired_with_baseline(trials: pd.DataFrame) -> pd.DataFrame:
    """Each variant minus the first one (the task's first method: its baseline), seed by seed,
    on every area under a curve (the ``*_auc`` columns), with the Student t interval of the
    mean difference over the seeds both finished (:func:`~rl_bk.experiments.measures.
    paired_difference`): a 95% interval at any number of seeds from two, where a percentile
    bootstrap over three seeds is only their range. Empty with one variant or no area."""
    done = trials[trials["status"] == DONE] if "status" in trials else trials
    variants = list(dict.fromkeys(done["variant"]))
    areas = [c for c in done.columns if c.endswith("_auc")]
    rows = []
    for variant in variants[1:]:
        for col in areas:
            runs = {v: done[done["variant"] == v] for v in (variant, variants[0])}
            by_seed = {v: dict(zip(r["seed"], r[col])) for v, r in runs.items()}
            d = paired_difference(by_seed[variant], by_seed[variants[0]])
            if d.seeds:
                rows.append(
                    {
                        "variant": variant,
                        "area under": col.removesuffix("_auc").replace("_", " "),
                        "paired seeds": len(d.seeds),
                        "mean difference": signed(d.mean),
                        "95% t interval": interval_text(d),
                    }
                )
    return pd.DataFrame(rows)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"
    return str(v)


def _markdown(df: pd.DataFrame) -> str:
    header = "| " + " | ".join(df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    rows = ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([header, rule, *rows]) + "\n"


def summary_for_reading(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary with "mean ± std" cells and only the columns a reader compares first."""
    out = pd.DataFrame({"variant": summary["variant"], "seeds": summary["seeds"]})
    for col in summary.columns:
        if not col.endswith("_mean"):
            continue
        base = col.removesuffix("_mean")
        if "steps_to_success" in base:
            reached = summary[f"{base}_reached"]
            out[base.replace("_", " ")] = [
                f"{_fmt(m)} ({r}/{n} seeds)" for m, r, n in zip(summary[col], reached, out["seeds"])
            ]
            continue
        std = summary.get(f"{base}_std")
        out[base.replace("_", " ")] = [
            _fmt(m) if std is None or math.isnan(s) else f"{_fmt(m)} ± {_fmt(s)}"
            for m, s in zip(summary[col], std if std is not None else [math.nan] * len(out))
        ]
    return out


def _paired_section(trials: pd.DataFrame) -> str:
    paired = paired_with_baseline(trials)
    if paired.empty:
        return ""
    baseline = next(iter(dict.fromkeys(trials.loc[trials["status"] == DONE, "variant"])))
    return (
        f"\n## Against {baseline}, paired by seed\n\n"
        "Each variant's area under a curve (the mean of the curve over every report, or every "
        f"greedy evaluation) minus {baseline}'s on the same seed, the mean of those "
        "differences, and its 95% Student t interval over the seeds (none from one seed). "
        "An interval that holds 0 does not tell the two apart at this number of seeds.\n\n"
        + _markdown(paired)
    )


def learning_curves(
    records: list[TrialRecord], metrics: dict[str, str], points: int = 50
) -> pd.DataFrame:
    """Curves on a common env-step grid per variant: mean, min and max over seeds.

    The grid spans only the steps where every seed has reported the metric (no value is
    invented before a seed's first finished episode or after its last report). A training
    metric is plotted only once it averages a full window of episodes (100): the first
    reports of a run average a handful, and one early success would start a curve at 1.
    """
    rows = []
    for label in dict.fromkeys(r.label for r in records):
        runs = [r.progress for r in records if r.label == label]
        for name, column in metrics.items():
            series = [
                _enough_episodes(p, column)[[M.ENV_STEPS, column]].dropna()
                for p in runs
                if column in p and M.ENV_STEPS in p
            ]
            series = [s for s in series if len(s)]
            if not series:
                continue
            start = max(float(s[M.ENV_STEPS].iloc[0]) for s in series)
            end = min(float(s[M.ENV_STEPS].iloc[-1]) for s in series)
            grid = np.linspace(start, end, points) if end > start else np.array([end])
            stack = np.vstack([np.interp(grid, s[M.ENV_STEPS], s[column]) for s in series])
            for x, mean, lo, hi in zip(grid, stack.mean(0), stack.min(0), stack.max(0)):
                rows.append(
                    {
                        "variant": label,
                        "metric": name,
                        "env_steps": x,
                        "mean": mean,
                        "min": lo,
                        "max": hi,
                        "seeds": len(series),
                    }
                )
    return pd.DataFrame(rows)


def _enough_episodes(
    progress: pd.DataFrame, column: str, window: int = M.SMOOTHING_EPISODES
) -> pd.DataFrame:
    """The reports at which a training ``column`` averages at least ``window`` episodes (all
    reports for evaluation columns, whose every value averages its own episodes)."""
    if column.startswith(M.EVAL_PREFIX) or M.EPISODES_LIFETIME not in progress:
        return progress
    return progress[progress[M.EPISODES_LIFETIME].fillna(0) >= window]


def plot_learning_curves(curves: pd.DataFrame, path: Path, title: str) -> None:
    # kept light: matplotlib loads only to plot; the Agg backend must be chosen before pyplot
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg")

    names = list(dict.fromkeys(curves["metric"]))
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4), squeeze=False)
    for ax, name in zip(axes[0], names):
        for label, c in curves[curves["metric"] == name].groupby("variant", sort=False):
            seeds = int(c["seeds"].iloc[0])
            n = f"{seeds} seed" + ("s" if seeds > 1 else "")
            (line,) = ax.plot(
                c["env_steps"],
                c["mean"],
                marker="." if len(c) == 1 else None,
                label=f"{label} ({n})",
            )
            ax.fill_between(c["env_steps"], c["min"], c["max"], alpha=0.2, color=line.get_color())
        ax.set_xlabel("env steps")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    # Below the plots: variant labels are long, and inside an axis they hide the curves.
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.suptitle(f"{title}: mean over seeds, band = min..max")
    fig.tight_layout()
    fig.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        fontsize=8,
        ncol=2 if len(labels) > 3 else 1,
        frameon=False,
    )
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def write_results(
    records: list[TrialRecord],
    run_dir: Path,
    *,
    title: str,
    main_metric: str = M.SUCCESS_RATE,
    success_threshold: float | None = 0.9,
    budgets: Iterable[int] = (),
) -> pd.DataFrame:
    """Writes the tables and the plot into ``run_dir``; returns the summary table.

    ``main_metric`` (a result key) is plotted beside the episode return; success columns
    appear when ``success_threshold`` is given.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    budgets = list(budgets)
    records = [
        TrialRecord(display_label(r.label), r.seed, smooth_over_episodes(r.progress), r.status)
        for r in records
    ]
    trials = pd.DataFrame([trial_row(r, success_threshold, main_metric, budgets) for r in records])
    trials.to_csv(run_dir / "trials.csv", index=False)
    summary = summarize(trials)
    summary.to_csv(run_dir / "summary.csv", index=False)
    failed = trials[trials["status"] != DONE]
    (run_dir / "summary.md").write_text(
        f"# {title}\n\n{whose_knowledge(run_dir)}"
        "Mean ± std over seeds of each finished trial's last reported values "
        "(means over its last 100 training episodes; `eval` columns: the last greedy "
        "evaluation). Steps to success: mean over the seeds that reached it.\n\n"
        + _markdown(summary_for_reading(summary))
        + (
            f"\n**{len(failed)} trial(s) did not finish** (status below): their numbers are in "
            "no mean above and no curve.\n"
            if len(failed)
            else ""
        )
        + _paired_section(trials)
        + "\n## Per trial\n\n"
        + _markdown(trials)
    )
    finished = [r for r in records if r.status == DONE]
    curves = learning_curves(finished, curve_metrics(main_metric, finished))
    curves.to_csv(run_dir / "curves.csv", index=False)
    if len(curves):
        plot_learning_curves(curves, run_dir / "learning_curves.png", title)
    return summary
