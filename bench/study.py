"""What the long BK studies share: run a task's sweep or continue it, and read each trial's
greedy-evaluation numbers back (bench/bk_hypotheses.py, bench/bk_reproduction.py).

A study is one ``rl_bk.experiments.run`` sweep, as ``tune_run.py`` runs it, written under a
folder of its own. Running the same study again finds it: a finished run is read, an
interrupted one resumes from its trials' checkpoints (``tune_run.py --resume``), so a study
that spans sessions is continued by re-running its command.
"""

from __future__ import annotations

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


def find_run(home: Path) -> Path | None:
    """The newest run folder under ``home`` (``<home>/<task>/<timestamp>/``), if any."""
    runs = sorted(p for p in home.glob("*/*") if (p / "task.yaml").is_file())
    return runs[-1] if runs else None


def is_finished(run_dir: Path | None) -> bool:
    return run_dir is not None and (run_dir / "summary.csv").is_file()


def run_or_resume(task, methods: list[str], steps: int, home: Path) -> Path:
    """The study's finished run folder: runs it, resumes it, or finds it done."""
    from rl_bk.experiments.run import RunOptions, resume_experiment, run_experiment

    run_dir = find_run(home)
    if is_finished(run_dir):
        return run_dir  # type: ignore[return-value]
    if run_dir is not None and (run_dir / "tune").is_dir():
        return resume_experiment(run_dir, RunOptions())
    return run_experiment(task, RunOptions(methods=methods, stop_timesteps=steps,
                                           output_dir=home))  # fmt: skip


@dataclass
class SeedNumbers:
    """One variant's numbers, one entry per seed (NaN: not reached, or the run ended first)."""

    seeds: list[int] = field(default_factory=list)
    eval_steps: list[float] = field(default_factory=list)  # to the threshold, greedy
    train_steps: list[float] = field(default_factory=list)  # to the threshold, 100 episodes
    eval_at: dict[int, list[float]] = field(default_factory=dict)
    train_at: dict[int, list[float]] = field(default_factory=dict)
    final_eval_return: list[float] = field(default_factory=list)


def seed_numbers(run_dir: Path, budgets: list[int],
                 threshold: float = 0.9) -> dict[str, SeedNumbers]:  # fmt: skip
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


def mean_sd(values: list[float]) -> str:
    """"m ± sd" over the values that exist (and how many, if some are missing)."""
    ok = [v for v in values if not math.isnan(v)]
    if not ok:
        return "–"
    m = sum(ok) / len(ok)
    sd = (sum((v - m) ** 2 for v in ok) / (len(ok) - 1)) ** 0.5 if len(ok) > 1 else 0.0
    return f"{m:.2f} ± {sd:.2f}" + ("" if len(ok) == len(values) else f" ({len(ok)} seeds)")


def steps_per_seed(values: list[float]) -> str:
    """"97k, never, 120k (2/3)": env steps to the threshold per seed, and how many reached it."""
    shown = ["never" if math.isnan(v) else f"{v / 1000:.0f}k" for v in values]
    return f"{', '.join(shown)} ({sum(not math.isnan(v) for v in values)}/{len(values)})"


def censored_mean(values: list[float], budget: int) -> tuple[float, bool]:
    """The mean env steps to the threshold, a seed that never reached it counted at the
    budget; and whether any was (then the mean is a lower bound)."""
    filled = [budget if math.isnan(v) else v for v in values]
    return (sum(filled) / len(filled) if filled else math.nan,
            any(math.isnan(v) for v in values))  # fmt: skip


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
