"""What the long BK studies share: run a task's sweep or continue it, and read each trial's
greedy-evaluation numbers back (bench/bk_reproduction.py, bench/long_study.py).

A study is run in parts of one method and one seed, each an ``rl_bk.experiments.run``
sweep (as ``tune_run.py`` runs it) under a folder of its own. Running the same part again
finds it: a finished run is read, an interrupted one resumes from its trials' checkpoints
(``tune_run.py --resume``). A finished part's numbers and curves are kept in the study's
results JSON, which is committed, so a study that spans sessions and machines (Tune's folders
are not committed) loses at most the trials it was running.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from rl_bk import metrics as M
from rl_bk.experiments.results import (
    display_label,
    records_from_tune_dir,
    smooth_over_episodes,
    steps_to_reach,
    value_at,
)


def code_commit() -> str:
    """The commit the code runs at (``+dirty`` when the library or task files differ from
    it), kept with every finished part: a study that spans sessions says what ran each part."""
    import subprocess

    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)

    head = git("rev-parse", "--short", "HEAD")
    if head.returncode != 0:
        return "unknown"
    # What a part's numbers depend on; a study's own results files change as it runs.
    code = [
        "rl_bk",
        "env_registry",
        "serve_deployments",
        "tune_configs",
        "bench",
        ":(exclude)bench/results",
    ]
    dirty = git("diff", "--quiet", "HEAD", "--", *code).returncode != 0
    return head.stdout.strip() + ("+dirty" if dirty else "")


def seed_parts(prefix: str, task) -> list[tuple[str, object, int]]:
    """(part id ``<prefix>/<seed>``, the task narrowed to that seed, seed) for each seed."""
    return [
        (f"{prefix}/{seed}", task.model_copy(update={"seeds": [seed]}), seed) for seed in task.seeds
    ]


def is_done(part: str, finished: dict) -> bool:
    """A per-seed part is done when it, or the whole-method part it belongs to (studies
    started before parts were per seed kept one part per method), is in ``finished``."""
    return part in finished or part.rsplit("/", 1)[0] in finished


#: The per-report columns a finished trial keeps for the study's curves.
CURVE_COLUMNS = (
    M.ENV_STEPS,
    M.EPISODES_LIFETIME,
    M.SUCCESS_RATE,
    M.EPISODE_RETURN_MEAN,
    M.EVAL_SUCCESS_RATE,
    M.EVAL_RETURN_MEAN,
)


def trial_curves(run_dir: Path, extra: tuple[str, ...] = ()) -> list[dict]:
    """Each trial's smoothed per-report values of ``CURVE_COLUMNS`` (and ``extra``), as the
    results JSON keeps them: ``{"label", "seed", "progress": {column: [values]},
    "restored_from": [env steps of each checkpoint it was resumed from]}``."""
    out = []
    for record in sorted(records_from_tune_dir(run_dir / "tune"), key=lambda r: r.seed):
        p = smooth_over_episodes(record.progress)
        cols = [c for c in dict.fromkeys((*CURVE_COLUMNS, *extra)) if c in p]
        out.append(
            {
                "label": display_label(record.label),
                "seed": record.seed,
                "progress": {c: [None if math.isnan(v) else float(v) for v in p[c]] for c in cols},
                "restored_from": list(record.restored_from),
            }
        )
    return out


def goes_back(curve: dict) -> bool:
    """Whether a stored curve (:func:`trial_curves`) steps back in env steps somewhere: a trial
    resumed from a checkpoint and kept before its superseded reports were dropped
    (:func:`rl_bk.experiments.results.without_superseded_reports`)."""
    steps = [s for s in curve["progress"].get(M.ENV_STEPS, []) if s is not None]
    return any(b <= a for a, b in itertools.pairwise(steps))


def plot_study(trials: list[dict], metrics: dict[str, str], path: Path, title: str) -> bool:
    """The study's learning curves from the trials the results JSON kept (mean over seeds,
    band = min..max); False when no trial kept the metrics."""
    import pandas as pd

    from rl_bk.experiments.results import TrialRecord, learning_curves, plot_learning_curves

    records = [
        TrialRecord(t["label"], t["seed"], pd.DataFrame(t["progress"], dtype=float)) for t in trials
    ]
    curves = learning_curves(records, metrics)
    if not len(curves):
        return False
    plot_learning_curves(curves, path, title)
    return True


def find_run(home: Path) -> Path | None:
    """The newest run folder under ``home`` (``<home>/<task>/<timestamp>/``), if any."""
    runs = sorted(p for p in home.glob("*/*") if (p / "task.yaml").is_file())
    return runs[-1] if runs else None


def is_finished(run_dir: Path | None) -> bool:
    """Whether the run wrote its tables and every trial in them finished (a run with a
    trial that errored or stopped early writes them too, its rows marked)."""
    if run_dir is None or not (run_dir / "trials.csv").is_file():
        return False
    import pandas as pd

    from rl_bk.experiments.results import DONE

    trials = pd.read_csv(run_dir / "trials.csv")
    return "status" not in trials or bool((trials["status"] == DONE).all())


def run_or_resume(task, methods: list[str], steps: int, home: Path) -> Path:
    """The study's finished run folder: runs it, resumes it (errored trials again from their
    last checkpoints), or finds it done. A trial that does not finish ends the study's
    command with its report and exit status 1, and its part is not recorded."""
    from rl_bk.experiments.run import RunOptions, TrialsFailed, resume_experiment, run_experiment

    run_dir = find_run(home)
    if is_finished(run_dir):
        return run_dir  # type: ignore[return-value]
    try:
        if run_dir is not None and (run_dir / "tune").is_dir():
            return resume_experiment(run_dir, RunOptions())
        return run_experiment(
            task, RunOptions(methods=methods, stop_timesteps=steps, output_dir=home)
        )
    except TrialsFailed as failed:
        raise SystemExit(failed.report()) from failed


@dataclass
class SeedNumbers:
    """One variant's numbers, one entry per seed (NaN: not reached, or the run ended first)."""

    seeds: list[int] = field(default_factory=list)
    eval_steps: list[float] = field(default_factory=list)  # to the threshold, greedy
    train_steps: list[float] = field(default_factory=list)  # to the threshold, 100 episodes
    eval_at: dict[int, list[float]] = field(default_factory=dict)
    train_at: dict[int, list[float]] = field(default_factory=dict)
    final_eval_return: list[float] = field(default_factory=list)


def merge_seed_numbers(parts: list[dict[str, dict]]) -> dict[str, dict]:
    """Per variant, the per-seed numbers of several parts (as the JSON keeps
    :class:`SeedNumbers`) in one, ordered by seed."""
    rows: dict[str, list[tuple[int, int, dict]]] = {}
    for numbers in parts:
        for label, n in numbers.items():
            rows.setdefault(label, []).extend((s, i, n) for i, s in enumerate(n["seeds"]))
    out = {}
    for label, entries in rows.items():
        entries.sort(key=lambda e: e[0])
        merged: dict = {"seeds": [s for s, _, _ in entries]}
        for key in ("eval_steps", "train_steps", "final_eval_return"):
            merged[key] = [n[key][i] for _, i, n in entries]
        for key in ("eval_at", "train_at"):
            budgets = dict.fromkeys(b for _, _, n in entries for b in n[key])
            merged[key] = {
                b: [n[key][b][i] if b in n[key] else math.nan for _, i, n in entries]
                for b in budgets
            }
        out[label] = merged
    return out


def seed_numbers(
    run_dir: Path, budgets: list[int], threshold: float = 0.9
) -> dict[str, SeedNumbers]:
    """Per variant (as the tables label it), each seed's numbers, read from Tune's folder."""
    out: dict[str, SeedNumbers] = {}
    for record in sorted(records_from_tune_dir(run_dir / "tune"), key=lambda r: r.seed):
        p = smooth_over_episodes(record.progress)
        n = out.setdefault(display_label(record.label), SeedNumbers())
        n.seeds.append(record.seed)
        n.eval_steps.append(steps_to_reach(p, M.EVAL_SUCCESS_RATE, threshold, min_episodes=0))
        n.train_steps.append(steps_to_reach(p, M.SUCCESS_RATE, threshold))
        for b in budgets:
            n.eval_at.setdefault(b, []).append(value_at(p, M.EVAL_SUCCESS_RATE, b))
            n.train_at.setdefault(b, []).append(value_at(p, M.SUCCESS_RATE, b))
        ret = p[M.EVAL_RETURN_MEAN].dropna() if M.EVAL_RETURN_MEAN in p else []
        n.final_eval_return.append(float(ret.iloc[-1]) if len(ret) else math.nan)
    return out


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


def steps_per_seed(values: list[float]) -> str:
    """ "97k, never, 120k (2/3)": env steps to the threshold per seed, and how many reached it."""
    shown = ["never" if math.isnan(v) else f"{v / 1000:.0f}k" for v in values]
    return f"{', '.join(shown)} ({sum(not math.isnan(v) for v in values)}/{len(values)})"


def censored_mean(values: list[float], budget: int) -> tuple[float, bool]:
    """The mean env steps to the threshold, a seed that never reached it counted at the
    budget; and whether any was (then the mean is a lower bound)."""
    filled = [budget if math.isnan(v) else v for v in values]
    return (sum(filled) / len(filled) if filled else math.nan, any(math.isnan(v) for v in values))


def steps_mean(values: list[float], budget: int) -> str:
    mean, censored = censored_mean(values, budget)
    return "–" if math.isnan(mean) else f"{'≥ ' if censored else ''}{mean / 1000:.0f}k"


READING = "## Reading (written by hand)"


def write_keeping_reading(path: Path, text: str) -> None:
    """Writes a results file's generated part, keeping the hand-written reading that follows
    ``READING`` in the file it replaces."""
    notes = ""
    if path.is_file() and READING in path.read_text():
        notes = READING + path.read_text().split(READING, 1)[1]
    path.write_text(text + ("\n" + notes if notes else ""))


def replace_section(report: Path, heading: str, section: list[str]) -> None:
    """Puts a generated ``section`` (starting with its ``heading`` line) into ``report`` in
    place of an older one (from its heading to the next ``## `` heading), or else just before
    the hand-written reading; the rest of the report is left as it is."""
    text = report.read_text() if report.is_file() else ""
    body = "\n".join(section).rstrip("\n") + "\n\n"
    if heading in text:
        before, _, rest = text.partition(heading)
        after = rest.split("\n## ", 1)
        text = before + body + ("## " + after[1] if len(after) > 1 else "")
    elif READING in text:
        before, _, reading = text.partition(READING)
        text = before.rstrip("\n") + "\n\n" + body + READING + reading
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + body
    report.write_text(text)


def select_arms(names: str | None, arms: list) -> list:
    """The arms named (comma-separated; all when None), in the script's order; an unknown
    name is an error that lists the known ones."""
    wanted = names.split(",") if names else [a.name for a in arms]
    unknown = set(wanted) - {a.name for a in arms}
    if unknown:
        raise SystemExit(f"unknown arms {sorted(unknown)}; known: {[a.name for a in arms]}")
    return [a for a in arms if a.name in wanted]


def continued_arms(results: Path, facts: dict) -> tuple[dict, dict[str, dict]]:
    """(facts, finished arms) of a screening that ``results`` (its JSON) kept, when it ran the
    same seeds and steps as ``facts`` say: a continued screening keeps its start and what it
    finished. Otherwise ``facts`` and nothing finished."""
    if not results.is_file():
        return facts, {}
    old = json.loads(results.read_text())
    if old.get("seeds") != facts["seeds"] or old.get("steps") != facts["steps"]:
        return facts, {}
    done = old.pop("arms", None) or {}
    return old, done


def write_arms(results: Path, text: str, facts: dict, done: dict[str, dict]) -> None:
    """A screening's table (keeping its hand-written reading) and its JSON of finished arms."""
    write_keeping_reading(results.with_suffix(".md"), text)
    results.with_suffix(".json").write_text(
        json.dumps({**facts, "arms": done}, indent=2, default=str)
    )
