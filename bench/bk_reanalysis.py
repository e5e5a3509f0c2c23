"""BK's reproduction re-analysed with a measure that can tell the methods apart.

    python -m bench.bk_reanalysis    # the plot, and its section of bk-reproduction.md

The plan's measure, env steps until greedy success reaches 0.9, sits at its floor: none of the
100 runs reaches 0.9. This reads the curves every finished part kept in
``bench/results/bk-reproduction.json`` (no run is added, dropped or re-run) and summarises
each run by the normalised area under its greedy-success curve up to the study's budget (the
mean greedy success over every evaluation up to it, ``bench/learning_measures.py``), and the
same for training success; each bk-* variant is paired by seed with ppo, with a 95% t
interval of the mean paired difference. Its section (:func:`reanalysis_section`) is part of
the report ``bench/bk_reproduction.py`` writes, so regenerating the report keeps it; running
this module draws ``bench/results/bk-reproduction-reanalysis.png`` and puts the section into
``bench/results/bk-reproduction.md`` in place of the old one, leaving the rest of the report
(the plan's tables, the hand-written reading) as it is.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from bench.learning_measures import (
    Area,
    PairedDifference,
    curve_points,
    interval_text,
    normalised_area,
    paired_difference,
    signed,
    value_at_budget,
)
from bench.study import mean_sd, replace_section
from rl_bk import metrics as M

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "bk-reproduction.json"
PLOT = RESULTS.parent / "bk-reproduction-reanalysis.png"
HEADING = "## Re-analysis with the primary measure (2026-11-26)"

#: One evaluation interval (every 10 training iterations: 20.5k-20.75k env steps in these
#: runs): a curve whose last point at or before the budget is further from it is incomplete.
TOLERANCE = 21_000
BASELINE = "ppo"


@dataclass
class Run:
    """One trial (variant, seed) of a study, summarised."""

    greedy: Area | None  # None: no curve kept
    training: Area | None
    greedy_at: dict[int, float] = field(default_factory=dict)  # greedy success at the budgets
    training_at: dict[int, float] = field(default_factory=dict)

    def at_budgets(self, which: str) -> float:
        """The mean of the values at the budgets: the approximation of the area that a run
        whose curve was not kept allows (both sides of a comparison use it alike)."""
        values = list((self.greedy_at if which == "greedy" else self.training_at).values())
        return sum(values) / len(values) if values else math.nan


def _area(area: Area | None) -> float:
    """An area for averaging and pairing: NaN when missing or incomplete (never averaged)."""
    return area.value if area is not None and area.complete else math.nan


def study_runs(finished: dict[str, dict], study: str) -> tuple[int, list[int], dict]:
    """(budget, budgets, {variant: {seed: Run}}) of one study's finished parts. The budget
    is the largest env-step budget its tables report (the run length); the training area
    starts at the study's first report by which every run has ended 100 episodes (before a
    full window the first episodes to end are mostly successes, so training success starts at
    1.0)."""
    mine = {p: f for p, f in finished.items() if p.split("/")[0] == study}
    budgets = sorted(
        {int(b) for f in mine.values() for n in f["numbers"].values() for b in n["eval_at"]}
    )
    budget = budgets[-1]
    curves = [c for f in mine.values() for c in f.get("curves", [])]
    start = max(
        (
            min(
                s
                for s, e in zip(c["progress"][M.ENV_STEPS], c["progress"][M.EPISODES_LIFETIME])
                if e is not None and e >= M.SMOOTHING_EPISODES
            )
            for c in curves
        ),
        default=0.0,
    )
    runs: dict[str, dict[int, Run]] = {}
    for f in mine.values():
        if "curves" not in f:  # values at the budgets only (redball-s20/ppo's first part)
            for label, n in f["numbers"].items():
                for i, seed in enumerate(n["seeds"]):
                    runs.setdefault(label, {})[seed] = Run(
                        None,
                        None,
                        {b: n["eval_at"][str(b)][i] for b in budgets},
                        {b: n["train_at"][str(b)][i] for b in budgets},
                    )
            continue
        for c in f["curves"]:
            p = c["progress"]
            greedy = curve_points(p[M.ENV_STEPS], p[M.EVAL_SUCCESS_RATE])
            training = [
                (s, v) for s, v in curve_points(p[M.ENV_STEPS], p[M.SUCCESS_RATE]) if s >= start
            ]
            runs.setdefault(c["label"], {})[c["seed"]] = Run(
                normalised_area(greedy, budget, tolerance=TOLERANCE),
                normalised_area(training, budget, tolerance=TOLERANCE),
                {b: value_at_budget(greedy, b, tolerance=TOLERANCE) for b in budgets},
                {b: value_at_budget(training, b, tolerance=TOLERANCE) for b in budgets},
            )
    return budget, budgets, runs


def paired(
    runs: dict[str, dict[int, Run]],
    label: str,
    which: str,
    approximate: bool,
    baseline: str = BASELINE,
) -> PairedDifference:
    """``label`` minus ``baseline`` by seed on the greedy or training area (or,
    ``approximate``, on the mean of the values at the budgets, for both sides)."""

    def stat(run: Run) -> float:
        if approximate:
            return run.at_budgets(which)
        return _area(run.greedy if which == "greedy" else run.training)

    return paired_difference(
        {s: stat(r) for s, r in runs[label].items()},
        {s: stat(r) for s, r in runs[baseline].items()},
    )


def short(label: str) -> str:
    """``bk-code`` for the task-agnostic variants, ``bk-code (goal-aware)`` otherwise."""
    method = label.split()[0]
    return f"{method} (goal-aware)" if "include_mission=True" in label else method


def is_primary(label: str) -> bool:
    """The primary comparisons: task-agnostic bk-* (BK's setting) against ppo."""
    return label.startswith("bk-") and "include_mission=True" not in label


def _area_cell(areas: list[Area | None]) -> str:
    if all(a is None for a in areas):
        return "not kept"
    cell = mean_sd([_area(a) for a in areas])
    missing = sum(a is not None and not a.complete for a in areas)
    return cell + (f", {missing} incomplete (left out)" if missing else "")


def _study_lines(
    study: str, budget: int, budgets: list[int], runs: dict[str, dict[int, Run]]
) -> tuple[list[str], list[tuple]]:
    """A study's tables, and its primary paired differences (for the plot and the summary)."""
    approximate = any(r.greedy is None for r in runs.get(BASELINE, {}).values())
    n_seeds = max(len(r) for r in runs.values())
    cols = ["greedy area", "training area", *[f"greedy @{b // 1000}k" for b in budgets]]
    if approximate:
        cols.insert(2, f"≈ greedy area ({', '.join(f'{b // 1000}k' for b in budgets)})")
    lines = [
        f"### {study} (budget {budget // 1000}k, {n_seeds} seeds)",
        "",
        "| variant | " + " | ".join(cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for label, by_seed in runs.items():
        rs = [by_seed[s] for s in sorted(by_seed)]
        cells = [_area_cell([r.greedy for r in rs]), _area_cell([r.training for r in rs])]
        if approximate:
            cells.append(mean_sd([r.at_budgets("greedy") for r in rs]))
        cells += [mean_sd([r.greedy_at[b] for r in rs]) for b in budgets]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    primary = []
    if BASELINE in runs:
        measure = (
            "≈ area: mean of the values at " + ", ".join(f"{b // 1000}k" for b in budgets)
            if approximate
            else "area"
        )
        lines += [
            "",
            f"Paired by seed, variant minus ppo ({measure}; 95% t interval of the "
            "mean difference):",
            "",
            "| variant | measure | per-seed differences | mean | 95% t interval |",
            "|---|---|---|---|---|",
        ]
        for label in runs:
            if label == BASELINE or not label.startswith("bk-"):
                continue
            for which in ("greedy", "training"):
                d = paired(runs, label, which, approximate)
                name = f"{'≈ ' if approximate else ''}{which} area"
                lines.append(
                    f"| {label} | {name} | {', '.join(signed(x) for x in d.diffs)} "
                    f"| {signed(d.mean)} | {interval_text(d)} |"
                )
                if is_primary(label):
                    primary.append((study, short(label), which, d, approximate))
    aware = {
        label: label.replace("include_mission=True", "include_mission=False").replace(
            "(GOAL-AWARE ORACLE)", "(ORACLE)"
        )
        for label in runs
        if "include_mission=True" in label
    }
    if aware:
        lines += [
            "",
            "Paired by seed, goal-aware minus task-agnostic oracle (same method; "
            "area; 95% t interval of the mean difference):",
            "",
            "| method | measure | per-seed differences | mean | 95% t interval |",
            "|---|---|---|---|---|",
        ]
        for label, agnostic in aware.items():
            for which in ("greedy", "training"):
                d = paired(runs, label, which, False, baseline=agnostic)
                lines.append(
                    f"| {label.split()[0]} | {which} area | "
                    f"{', '.join(signed(x) for x in d.diffs)} | {signed(d.mean)} | "
                    f"{interval_text(d)} |"
                )
    return [*lines, ""], primary


def _plot(primary: list[tuple], path: Path) -> None:
    """Each task-agnostic bk-* minus ppo per study: the mean paired difference with its 95%
    interval (bar) and the per-seed differences (dots); greedy and training area."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    studies = list(dict.fromkeys(p[0] for p in primary))
    methods = list(dict.fromkeys(p[1] for p in primary))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=False)
    for ax, which in zip(axes, ("greedy", "training")):
        for j, method in enumerate(methods):
            for study, m, w, d, approximate in primary:
                if m != method or w != which or not d.diffs:
                    continue
                x = studies.index(study) + (j - (len(methods) - 1) / 2) * 0.22
                color = f"C{j}"
                ax.scatter([x] * len(d.diffs), d.diffs, s=10, color=color, alpha=0.35)
                err = None if d.ci is None else [[d.mean - d.ci[0]], [d.ci[1] - d.mean]]
                ax.errorbar(
                    [x],
                    [d.mean],
                    yerr=err,
                    fmt="o",
                    color=color,
                    capsize=3,
                    mfc="white" if approximate else color,
                    label=method if studies.index(study) == 0 else None,
                )
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(range(len(studies)))
        ax.set_xticklabels(
            [s + (" (≈)" if any(p[0] == s and p[4] for p in primary) else "") for s in studies],
            rotation=20,
        )
        ax.set_title(f"{which} area up to the budget: bk-* minus ppo, paired by seed")
        ax.set_ylabel(f"difference in mean {which} success")
    axes[0].legend(title="task-agnostic (ORACLE)", fontsize=8)
    fig.text(
        0.01,
        0.01,
        "dot: per-seed difference; marker and bar: mean and 95% Student t "
        "interval (3 seeds, 5 on redball-s20). (≈) hollow: ppo's curve "
        "not kept, mean of the values at 100k/200k/300k on both sides.",
        fontsize=7,
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reanalysis_section(finished: dict[str, dict], plot: Path | None = PLOT) -> list[str]:
    """The report's re-analysis section (markdown lines) from the finished parts, and its
    plot (drawn when ``plot`` is a path), studies in the order their parts ran (the plan's).
    Studies not yet run are left out."""
    lines = [
        HEADING,
        "",
        "Written by `bench/bk_reanalysis.py` (measures: `bench/learning_measures.py`) from the "
        "curves each part kept in `bk-reproduction.json`; no run was added, dropped or re-run. "
        "This measure was chosen after the results were seen, because the plan's measure (env "
        "steps to 0.9 greedy success) sits at its floor: no run reaches 0.9.",
        "",
        "- **Primary measure, greedy area**: the mean greedy success (50 episodes) over every "
        "evaluation up to the budget, a normalised area under the greedy curve. Evaluations "
        "run every 20.5k–20.75k env steps: 14 up to 300k (the last at about 289k), 24 up to "
        "500k (the last at about 497k). An evaluation exactly at the budget counts, none past "
        f"it; a curve whose last evaluation before the budget is more than {TOLERANCE:,} env "
        "steps (one interval) short of it is incomplete and left out of means and pairs (none "
        "is).",
        "- **Training area**: the same over training success (stochastic policy, last 100 "
        "episodes, every report of about 2k env steps), from the study's first report by "
        "which every run has ended 100 episodes (before that the few episodes that have ended "
        "are mostly successes and training success reads 1.0).",
        "- **Paired by seed**: bk-* minus ppo on each seed both ran, the mean, and the 95% "
        "Student t interval of the mean difference (n − 1 degrees of freedom; "
        "`bench.learning_measures.t_interval`). Until 2026-12-02 these tables printed a "
        "percentile bootstrap interval, which with 3 seeds is the range of the three "
        "differences and covers the true mean about 75% of the time, not 95%; the t interval "
        "is wider and its coverage is 95% (a test by simulation: "
        "`tests/unit/test_learning_measures.py`). Primary: the task-agnostic bk-* rows (BK's "
        "setting); the goal-aware and rnd rows are shown, not summarised.",
        "- **RedBall-S20's ppo** ran before per-report curves were kept: only its values at "
        "100k, 200k and 300k are left. Its area is not computed; on RedBall-S20 every variant "
        "is paired with ppo on the mean of the values at 100k, 200k and 300k (≈), computed "
        "alike for both sides: an approximation of the area from three points, which leaves "
        "out the early evaluations. The full-curve areas of the other rows are shown beside "
        "it.",
        "",
    ]
    primary = []
    for study in dict.fromkeys(part.split("/")[0] for part in finished):
        budget, budgets, runs = study_runs(finished, study)
        study_lines, study_primary = _study_lines(study, budget, budgets, runs)
        lines += study_lines
        primary += study_primary
    if not primary:
        return [*lines, "No study has run yet.", ""]
    methods = list(dict.fromkeys(p[1] for p in primary))
    lines += [
        "### Summary: task-agnostic bk-* minus ppo, greedy area (95% t interval)",
        "",
        "| study | " + " | ".join(methods) + " |",
        "|---|" + "---|" * len(methods),
    ]
    for study in dict.fromkeys(p[0] for p in primary):
        cells = {
            m: f"{signed(d.mean)} {interval_text(d)}{' ≈' if approximate else ''}"
            for s, m, w, d, approximate in primary
            if s == study and w == "greedy"
        }
        lines.append(f"| {study} | " + " | ".join(cells.get(m, "–") for m in methods) + " |")
    lines.append("")
    if plot is not None:
        _plot(primary, plot)
        lines += [f"Plot: `{plot.name}` (both areas; dots are the per-seed differences).", ""]
    lines += [
        "The reading of these numbers is the first part of the hand-written reading below.",
        "",
    ]
    return lines


def main() -> int:
    finished = json.loads(RESULTS.read_text())["finished"]
    section = reanalysis_section(finished, PLOT)
    replace_section(RESULTS.with_suffix(".md"), HEADING, section)
    print("\n".join(section))
    print(f"[bk-reanalysis] wrote {PLOT} and its section of {RESULTS.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
