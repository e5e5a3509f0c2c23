"""A study's report, ``studies/results/<study>.md`` (and its JSON, its curves' PNGs): the plan
as fixed before the first trial, then per part the trials' numbers (mean ± std over seeds),
Crafter's unlock rates, the paired comparisons the plan names (normalised areas under its
curves, the mean paired difference and its 95% Student t interval), the knowledge each trial
used, and what is still to run. Rewritten after every trial; the hand-written reading below
``## Reading (written by hand)`` is kept.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from bench.results_files import write_keeping_reading
from rl_bk import metrics as M
from rl_bk.experiments.measures import (
    curve_points,
    interval_text,
    normalised_area,
    paired_difference,
    signed,
)
from rl_bk.experiments.results import (
    CURVE_NAMES,
    DONE,
    TrialRecord,
    learning_curves,
    plot_learning_curves,
)
from rl_bk.experiments.task_config import load_task
from studies.plan import Pairing, StudyPlan
from studies.trials import is_done, plan_tasks, sweep_units


def mean_sd(values: list[float | None], spec: str = ".2f", sd_spec: str | None = None) -> str:
    """ "m ± sd" over the values that exist (None and nan do not), then "(k/n)" if only k of
    the n exist. ``spec`` formats the mean, ``sd_spec`` the sd (default: ``spec``)."""
    ok = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not ok:
        return "–"
    m = sum(ok) / len(ok)
    sd = (sum((v - m) ** 2 for v in ok) / (len(ok) - 1)) ** 0.5 if len(ok) > 1 else 0.0
    text = f"{m:{spec}} ± {sd:{sd_spec or spec}}"
    return text + ("" if len(ok) == len(values) else f" ({len(ok)}/{len(values)})")


# ------------------------------------------------------------------------------ the plan
def plan_lines(plan: StudyPlan, facts: dict, smoke: bool = False) -> list[str]:
    tasks = plan_tasks(plan, smoke)
    task_files = dict.fromkeys(p.task for p in plan.parts)
    file_steps = ", ".join(f"`{t}` {load_task(t).stop.num_env_steps:,}" for t in task_files)
    command, current = f"`{facts['command']}`", f"python -m studies.run {plan.name}"
    if not facts["command"].startswith(current):  # begun by an earlier driver
        command += f" (continued by `{current}`)"
    lines = [
        f"# {plan.name}",
        "",
        f"{command} (started {facts['date']}, {facts['machine']}). The plan, "
        f"`studies/plans/{plan.name}.yaml`, was fixed before the first run.",
        "",
        f"**Question.** {plan.question}",
        "",
        "## Plan",
        "",
        "Every task file as committed (its methods, sweep grid, settings); seeds, "
        "budgets and metric below, none dropped or swapped after being seen. Numbers: "
        "mean ± std over seeds of each trial's value at the budget (the training "
        "episodes' mean over the last 100), and per seed where a threshold applies.",
    ]
    if plan.leave_out:
        left = ", ".join(n.replace("_", " ") for n in plan.leave_out)
        lines += [
            "",
            f"Primary measure: {without_name(plan.leave_out)} per trial at its end, that is "
            f"achievements per episode minus the unlock rates of {left} (each the training "
            "episodes' mean over the last 100).",
        ]
    if plan.steps is not None:
        lines += [
            "",
            f"Env steps: {plan.steps:,} per trial (the task files: {file_steps}); the papers' "
            "budgets do not fit these CPUs: a departure, not the papers' setting.",
        ]
    if plan.knowledge:
        lines += ["", f"Knowledge: {plan.knowledge}"]
    if plan.curves:
        lines += [
            "",
            "Paired measures: the normalised area under each of these curves, "
            + ", ".join(f"`{c}`" for c in plan.curves)
            + " (the first is primary).",
        ]
    lines += [line for note in plan.notes for line in ("", note)]
    lines += [
        "",
        "| part | task | methods | seeds | env steps | budgets | metric |",
        "|---|---|---|---|---|---|---|",
    ]
    for part in plan.parts:
        t, changes = tasks[part.name], plan.part_changes(part)
        methods = ", ".join(
            f"{m} ({_grid(t.sweep[m])})" if m in changes.sweep else m for m in t.methods
        )
        if changes.sections:
            methods += "; with " + ", ".join(
                f"{sec}.{k}={v}"
                for sec, fields in changes.sections.items()
                for k, v in fields.items()
            )
        lines.append(
            f"| {part.name} | `{part.task}` | {methods} | {t.seeds} | "
            f"{t.stop.num_env_steps:,} | {', '.join(f'{b:,}' for b in t.budgets)} | "
            f"{M.MAIN_METRICS[t.metric]} |"
        )
    return lines


def _grid(grid: dict[str, list]) -> str:
    return ", ".join(f"{k}={'/'.join(str(v) for v in vs)}" for k, vs in grid.items())


# --------------------------------------------------------------------------- the numbers
def numbers_table(rows: list[dict]) -> list[str]:
    """One line per variant: mean ± std over its seeds of every column any row has (a
    method's own columns, PTGM's KL or BC-PPO's cloning accuracy, are "–" for the others)."""
    # as the results table: only finished trials enter the means (a row without a status
    # predates the column)
    rows = [r for r in rows if r.get("status", DONE) == DONE]
    if not rows:
        return []
    skip = {"variant", "seed", "env_steps_per_s", "status"}
    cols = [c for c in dict.fromkeys(c for r in rows for c in r) if c not in skip]
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    lines = [
        "| variant | seeds | " + " | ".join(c.replace("_", " ") for c in cols) + " |",
        "|---|---|" + "---|" * len(cols),
    ]
    for v in variants:
        mine = [r for r in rows if r["variant"] == v]
        # general formats: columns range from KL values near 0 to returns in the thousands
        cells = [mean_sd([r[c] for r in mine if c in r], ".3g", ".2g") for c in cols]
        lines.append(f"| {v} | {len(mine)} | " + " | ".join(cells) + " |")
    return lines


def achievement_table(entries: list[dict], variants: list[str] = ()) -> list[str]:
    """Crafter: each achievement's unlock rate (% of the last 100 training episodes at the
    end), mean ± std over seeds per variant (in the order of ``variants``, then any other);
    the most often unlocked first. Empty when no entry has rates (not Crafter)."""
    kept: dict[str, list[dict[str, float]]] = {}
    for entry in entries:
        for variant, rates in entry.get("achievements", {}).items():
            kept.setdefault(variant, []).append(rates)
    if not kept:
        return []
    per_variant = {v: kept[v] for v in [*variants, *kept] if v in kept}
    without = [v for v in variants if v not in kept]
    names = list(dict.fromkeys(n for seeds in per_variant.values() for r in seeds for n in r))

    def mean(name: str) -> float:
        values = [r.get(name, math.nan) for seeds in per_variant.values() for r in seeds]
        ok = [v for v in values if v is not None and not math.isnan(v)]
        return sum(ok) / len(ok) if ok else -1.0

    lines = [
        "Unlock rate per achievement (% of episodes; mean ± std over seeds):",
        "",
        "| achievement | " + " | ".join(per_variant) + " |",
        "|---|" + "---|" * len(per_variant),
    ]
    for name in sorted(names, key=lambda n: (-mean(n), n)):
        cells = [
            mean_sd(
                [100 * r[name] if r.get(name) is not None else math.nan for r in seeds],
                ".3g",
                ".2g",
            )
            for seeds in per_variant.values()
        ]
        lines.append(f"| {name.replace('_', ' ')} | " + " | ".join(cells) + " |")
    if without:  # finished before the rates were kept, with their runs no longer here
        lines += [
            "",
            f"Not kept for: {', '.join(without)} (finished before these rates "
            "were kept, and its runs are no longer on the machine that ran them).",
        ]
    return lines


def without_name(names: list[str]) -> str:
    return "achievements_per_episode_without_" + "_".join(names)


def rows_leaving_out(entries: list[dict], names: list[str]) -> list[dict]:
    """Each entry's rows with one more column: achievements per episode minus the unlock
    rates of ``names`` at the trial's end (an episode's count is the sum of its unlocks, so
    the two last-100-episode means subtract exactly); NaN where the rates were not kept."""
    out = []
    for entry in entries:
        for row in entry["rows"]:
            rates = entry.get("achievements", {}).get(row["variant"])
            left = (
                row["achievements_per_episode"] - sum(rates[n] for n in names)
                if rates and all(n in rates for n in names)
                else math.nan
            )
            out.append({**row, without_name(names): left})
    return out


# -------------------------------------------------------------------- paired comparisons
def baseline_of(pairing: Pairing, label: str) -> str | None:
    """The variant a variant is paired with: with ``(tag, baseline_tag)`` the same label with
    ``baseline_tag`` in place of ``tag`` (variants without ``tag`` are not paired); with a
    label, that variant for every other one (every method against one baseline method)."""
    if isinstance(pairing, str):
        return pairing if label != pairing else None
    tag, baseline_tag = pairing
    return label.replace(tag, baseline_tag) if tag in label else None


def shown_as(variant: str | None, labels: list[str]) -> str | None:
    """The label among ``labels`` that names ``variant``: itself, or it followed by what the
    tables add (a sweep setting, " (ORACLE)")."""
    if variant is None:
        return None
    return next(
        (label for label in labels if label == variant or label.startswith(variant + " ")), None
    )


def paired_table(
    pairings: list[Pairing], curves: list[dict], columns: list[str], budget: int
) -> list[str]:
    """Each variant against its baseline under each pairing (:func:`baseline_of`), per
    column: the normalised area under each seed's curve up to ``budget`` (the mean of its
    reports; :mod:`rl_bk.experiments.measures`), and the paired difference with its 95% t interval
    (both areas over the seeds the two share). Curves short of the budget are counted."""
    labels = list(dict.fromkeys(c["label"] for c in curves))
    pairs = [
        (label, base)
        for pairing in pairings
        for label in labels
        if (base := shown_as(baseline_of(pairing, label), labels)) not in (None, label)
    ]
    lines = []
    for label, base in pairs:
        for column in columns:
            areas: dict[str, dict[int, float]] = {label: {}, base: {}}
            short = 0
            for c in curves:
                if c["label"] not in areas or column not in c["progress"]:
                    continue
                points = curve_points(c["progress"][M.ENV_STEPS], c["progress"][column])
                area = normalised_area(points, budget, tolerance=max(21_000, budget // 30))
                if area.complete:
                    areas[c["label"]][c["seed"]] = area.value
                else:
                    short += 1
            if not areas[label] or not areas[base]:
                continue
            d = paired_difference(areas[label], areas[base])

            def mean(values: dict[int, float], seeds=d.seeds) -> str:  # the paired seeds only
                return f"{sum(values[s] for s in seeds) / len(seeds):.3g}"

            name = (
                "greedy success (evaluation)"
                if column == M.EVAL_SUCCESS_RATE
                else CURVE_NAMES.get(column, column)
            )
            lines.append(
                f"| {label} − {base} | {name} | "
                f"{len(d.seeds)} | {mean(areas[label])} | {mean(areas[base])} | "
                f"{signed(d.mean)} | {interval_text(d)} | {short or ''} |"
            )
    if not lines:
        return []
    return [
        f"Paired by seed, the normalised area under each curve up to {budget:,} env steps "
        "(the mean of its reports: training curves over the last 100 episodes at every "
        "iteration, greedy evaluations every 20k), and the mean paired difference with its "
        "95% Student t interval over the seeds (`rl_bk.experiments.measures.t_interval`):",
        "",
        "| pair | curve | seeds | area | baseline's area | difference | 95% t interval | "
        "curves short of the budget |",
        "|---|---|---|---|---|---|---|---|",
        *lines,
    ]


def knowledge_lines(finished: dict) -> list[str]:
    """Which knowledge the part's trials used: per variant, each distinct artifact (its
    fingerprint, the dataset's, and whose labels it holds) and how many trials used it."""
    seen: dict[tuple, list[str]] = {}
    for part, entry in finished.items():
        for variant, k in entry.get("knowledge", {}).items():
            key = (
                variant,
                k.get("fingerprint"),
                k.get("dataset_fingerprint"),
                k.get("labels") or "none",
            )
            seen.setdefault(key, []).append(part.split("/")[-1])
    if not seen:
        return []
    lines = [
        "Knowledge the trials used (artifact fingerprint, dataset fingerprint, labels):",
        "",
        "| variant | artifact | dataset | labels | seeds |",
        "|---|---|---|---|---|",
    ]
    for (variant, art, data, labels), seeds in sorted(seen.items(), key=str):
        art = f"`{art}`" if art else "– (asked while training)"
        data = f"`{data}`" if data else "–"
        lines.append(f"| {variant} | {art} | {data} | {labels} | {', '.join(seeds)} |")
    return lines


def plot_curves(trials: list[dict], metrics: dict[str, str], path: Path, title: str) -> bool:
    """The learning curves of the trials the results JSON kept (mean over seeds, band =
    min..max); False when no trial kept the metrics."""
    records = [
        TrialRecord(t["label"], t["seed"], pd.DataFrame(t["progress"], dtype=float)) for t in trials
    ]
    curves = learning_curves(records, metrics)
    if not len(curves):
        return False
    plot_learning_curves(curves, path, title)
    return True


# ---------------------------------------------------------------------------- the report
def write_report(
    plan: StudyPlan, facts: dict, finished: dict, results: Path, smoke: bool = False
) -> None:
    lines = [*plan_lines(plan, facts, smoke), "", "## Results", ""]
    tasks = plan_tasks(plan, smoke)
    for part in plan.parts:
        name, task = part.name, tasks[part.name]
        mine = {p: f for p, f in finished.items() if p.split("/")[0] == name}
        lines += [f"### {name} (`{part.task}`)", ""]
        if not mine:
            lines += ["Not run yet.", ""]
            continue
        rows = sorted(
            rows_leaving_out(list(mine.values()), plan.leave_out)
            if plan.leave_out
            else (r for f in mine.values() for r in f["rows"]),
            key=lambda r: (
                task.methods.index(r["variant"].split()[0])
                if r["variant"].split()[0] in task.methods
                else 99,
                r["variant"],
                r["seed"],
            ),
        )
        lines += [*numbers_table(rows), ""]
        variants = list(dict.fromkeys(r["variant"] for r in rows))
        if table := achievement_table(list(mine.values()), variants):
            lines += [*table, ""]
        main = M.MAIN_METRICS[task.metric]
        curves = [c for f in mine.values() for c in f.get("curves", [])]
        if plan.paired:
            columns = plan.curves or [
                main,
                *([M.EVAL_SUCCESS_RATE] if main == M.SUCCESS_RATE else []),
            ]
            if table := paired_table(plan.paired, curves, columns, task.stop.num_env_steps):
                lines += [*table, ""]
        if knowledge := knowledge_lines(mine):
            lines += [*knowledge, ""]
        commits = ", ".join(
            f"`{c}`" for c in sorted({f.get("commit", "not recorded") for f in mine.values()})
        )
        lines.append(
            f"Runs (not committed): `studies/runs/{plan.name}/{name}/<method>/<seed>/`; "
            f"code: {commits}."
        )
        plot = results / f"{plan.name}-{name}.png"
        if plot_curves(curves, {CURVE_NAMES.get(main, main): main}, plot, f"{plan.name}, {name}"):
            lines.append(f"Curves: `{plot.name}`.")
        missing = [
            f"{unit} (seeds {', '.join(str(s) for s in left)})"
            for unit, _, _ in sweep_units(task, plan.one_variant_per_sweep)
            if (left := [s for s in task.seeds if not is_done(f"{name}/{unit}/{s}", mine)])
        ]
        if missing:
            lines.append(f"Still to run: {'; '.join(missing)}.")
        lines.append("")
    write_keeping_reading(results / f"{plan.name}.md", "\n".join(lines))
    (results / f"{plan.name}.json").write_text(
        json.dumps({**facts, "finished": finished}, indent=2, default=float)
    )
