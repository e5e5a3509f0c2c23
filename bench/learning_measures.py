"""Summarising learning curves, and comparing methods paired by seed.

A curve is a list of ``(env_steps, value)`` points, one per evaluation (or report), in
increasing env steps. The primary measure is the normalised area under a curve up to a
budget: the mean of its values at every evaluation up to the budget. It uses the whole curve,
so it can tell methods apart where a threshold that no run reaches cannot (env steps to 0.9
greedy success, which every BK reproduction run missed). Two methods are compared by the
per-seed difference of such a statistic, with a bootstrap interval of the mean difference. Over
several tasks, :func:`pooled_difference` averages the tasks' paired differences and
resamples the seeds within each task.

Env steps to a threshold stay available as a secondary measure where they already live:
``rl_bk.experiments.results.steps_to_reach`` per trial and ``bench.study.censored_mean`` over
seeds (a seed that never reaches it counted at the budget). :func:`paired_difference` pairs
any per-run statistic, those included.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

Point = tuple[float, float]


def curve_points(steps: Iterable[float | None], values: Iterable[float | None]) -> list[Point]:
    """The ``(env_steps, value)`` points of two aligned columns (as a results JSON keeps a
    trial's progress), leaving out the reports without a value (None or NaN): an evaluation
    runs only every few reports."""
    return [(float(s), float(v)) for s, v in zip(steps, values, strict=True)
            if s is not None and v is not None and not math.isnan(v)]  # fmt: skip


@dataclass(frozen=True)
class Area:
    """A curve's normalised area up to a budget (:func:`normalised_area`)."""

    value: float  # mean of the values at the points up to the budget; NaN when none
    points: int  # how many points it averages
    last_step: float  # env steps of the last point at or before the budget; NaN when none
    complete: bool  # that point lies within the tolerance of the budget


def _up_to(points: Iterable[Point], budget: float, tolerance: float) -> tuple[list[Point], bool]:
    """The points at or before the budget, and whether the last of them is within
    ``tolerance`` env steps of it."""
    kept = sorted((p for p in points if p[0] <= budget), key=lambda p: p[0])
    return kept, bool(kept) and budget - kept[-1][0] <= tolerance


def normalised_area(points: Iterable[Point], budget: float, *, tolerance: float) -> Area:
    """The mean of the curve's values at every point with env steps <= ``budget``: the
    normalised area under the curve up to the budget (each evaluation weighs the same, which
    is the area of the step curve when the evaluations are evenly spaced, divided by its
    length). On a success rate it lies in [0, 1]; it counts how early a method learns as
    well as where it ends, and needs no threshold to be reached.

    The budget edge: a point exactly at the budget is included, any point past it is not.
    Evaluations run every few env steps, so the last one before the budget is usually a little
    short of it; the curve is ``complete`` when that point lies within ``tolerance`` env steps
    of the budget (pass one evaluation interval). A curve without such a point (the run
    stopped early, or was not evaluated near the budget) is incomplete: its ``value`` is still
    the mean of the points it has, but it covers less of the budget and is not comparable, so
    callers must report it as incomplete rather than average it with complete ones.
    """
    kept, complete = _up_to(points, budget, tolerance)
    if not kept:
        return Area(math.nan, 0, math.nan, False)
    return Area(sum(v for _, v in kept) / len(kept), len(kept), kept[-1][0], complete)


def value_at_budget(points: Iterable[Point], budget: float, *, tolerance: float) -> float:
    """The value at the last point at or before ``budget`` (the budget edge as in
    :func:`normalised_area`); NaN when no point lies within ``tolerance`` of the budget (a run
    that stopped earlier says nothing about the budget)."""
    kept, complete = _up_to(points, budget, tolerance)
    return kept[-1][1] if complete else math.nan


@dataclass(frozen=True)
class PairedDifference:
    """Method minus baseline, seed by seed (:func:`paired_difference`)."""

    seeds: list[int]  # the seeds both have, in order
    diffs: list[float]  # method - baseline on each of those seeds
    mean: float  # the mean of ``diffs``; NaN when no seed is shared
    ci: tuple[float, float] | None  # bootstrap interval of the mean; None below 2 seeds
    confidence: float = 0.95


def paired_difference(method: Mapping[int, float], baseline: Mapping[int, float], *,
                      confidence: float = 0.95, resamples: int = 10_000,
                      random_state: int = 0) -> PairedDifference:  # fmt: skip
    """The per-seed difference ``method[seed] - baseline[seed]`` of a per-run statistic (an
    area, a value at a budget, env steps to a threshold), over the seeds both have a value for
    (a missing or NaN value leaves that seed out: pairing by seed removes what a seed does to
    both runs, so an unpaired run is not used), their mean, and a percentile bootstrap
    interval of the mean difference (``scipy.stats.bootstrap``: ``resamples`` resamples of the
    seeds, fixed ``random_state``, so a report is reproducible).

    With 5 seeds or fewer the interval is coarse: there are only a few distinct resamples
    (10 for 3 seeds), the percentile interval then spans about the smallest to the largest
    difference, and it tends to be too narrow rather than too wide (small-sample bootstrap
    under-covers). Read it as the spread of the paired differences, not as a test. With a
    single shared seed there is no interval (``ci`` None), and none is made up; when every
    difference is the same, the interval is that one value.
    """
    import numpy as np
    from scipy import stats

    seeds = sorted(s for s in method.keys() & baseline.keys()
                   if not (math.isnan(method[s]) or math.isnan(baseline[s])))  # fmt: skip
    diffs = [float(method[s] - baseline[s]) for s in seeds]
    if not diffs:
        return PairedDifference([], [], math.nan, None, confidence)
    mean = sum(diffs) / len(diffs)
    ci = None
    if len(diffs) > 1:
        result = stats.bootstrap((np.asarray(diffs),), np.mean, n_resamples=resamples,
                                 confidence_level=confidence, method="percentile",
                                 random_state=random_state)  # fmt: skip
        low, high = result.confidence_interval
        ci = (float(low), float(high))
    return PairedDifference(seeds, diffs, mean, ci, confidence)


@dataclass(frozen=True)
class PooledDifference:
    """Method minus baseline over several tasks, each paired by seed (:func:`pooled_difference`)."""

    tasks: list[str]  # the tasks pooled, in order
    diffs: list[float]  # every (task, seed) difference, task by task
    mean: float  # the mean over tasks of each task's mean difference; NaN with no task
    ci: tuple[float, float] | None  # stratified bootstrap interval; None if no task has 2 seeds
    confidence: float = 0.95


def pooled_difference(per_task: Mapping[str, PairedDifference], *, confidence: float = 0.95,
                      resamples: int = 10_000, random_state: int = 0) -> PooledDifference:
    """The mean paired difference over tasks (each task weighs the same), with a percentile
    bootstrap interval that resamples the seeds within each task (stratified by task: a task's
    seeds are never traded for another task's). The interval is about these tasks and seeds;
    it does not resample the tasks, so it says nothing of tasks outside them. With three seeds
    a task, one task's interval is about the range of its differences (:func:`paired_difference`);
    pooling six tasks resamples 18 differences, and its interval narrows with them."""
    import numpy as np
    from scipy import stats

    tasks = [t for t, d in per_task.items() if d.diffs]
    groups = [np.asarray(per_task[t].diffs, dtype=float) for t in tasks]
    diffs = [float(x) for g in groups for x in g]
    if not groups:
        return PooledDifference([], [], math.nan, None, confidence)

    mean = float(np.mean([g.mean() for g in groups]))
    # A task with one seed has nothing to resample; it enters every resample as it is.
    varied = [g for g in groups if len(g) > 1]
    const = sum(float(g.mean()) for g in groups if len(g) == 1)
    ci = None
    if varied:

        def statistic(*samples, axis=-1):
            return (np.sum([s.mean(axis=axis) for s in samples], axis=0) + const) / len(groups)

        result = stats.bootstrap(tuple(varied), statistic, n_resamples=resamples,
                                 confidence_level=confidence, method="percentile",
                                 random_state=random_state)  # fmt: skip
        low, high = result.confidence_interval
        ci = (float(low), float(high))
    return PooledDifference(tasks, diffs, mean, ci, confidence)


def unpaired_difference(method: Iterable[float], baseline: Iterable[float], *,
                        confidence: float = 0.95, resamples: int = 10_000,
                        random_state: int = 0) -> PairedDifference:  # fmt: skip
    """``mean(method) - mean(baseline)`` for runs that share nothing to pair them by (two
    implementations seeding their RNGs their own way), with a percentile bootstrap interval
    that resamples each group on its own. ``seeds`` and ``diffs`` are left empty. With three
    runs a side the interval is coarse and tends to be too narrow: read it as a spread."""
    import numpy as np
    from scipy import stats

    a = [float(v) for v in method if not math.isnan(v)]
    b = [float(v) for v in baseline if not math.isnan(v)]
    if not a or not b:
        return PairedDifference([], [], math.nan, None, confidence)
    mean = sum(a) / len(a) - sum(b) / len(b)
    ci = None
    if len(a) > 1 and len(b) > 1:
        def mean_difference(x, y, axis=-1):
            return np.mean(x, axis=axis) - np.mean(y, axis=axis)

        result = stats.bootstrap((np.asarray(a), np.asarray(b)), mean_difference,
                                 n_resamples=resamples, confidence_level=confidence,
                                 method="percentile", random_state=random_state)  # fmt: skip
        low, high = result.confidence_interval
        ci = (float(low), float(high))
    return PairedDifference([], [], mean, ci, confidence)


def within_task_sd(groups: Iterable[Iterable[float]]) -> tuple[float, int]:
    """The pooled standard deviation of per-seed paired differences around their own group's
    mean (a group: one method on one task), and its degrees of freedom (seeds minus one,
    summed over groups). It measures how much a paired difference varies from seed to seed,
    whatever its mean; groups of one seed add nothing. NaN with no degree of freedom."""
    squares, dof = 0.0, 0
    for group in groups:
        values = [float(x) for x in group]
        if len(values) > 1:
            mean = sum(values) / len(values)
            squares += sum((x - mean) ** 2 for x in values)
            dof += len(values) - 1
    return (math.sqrt(squares / dof) if dof else math.nan), dof


def sd_interval(sd: float, dof: int, confidence: float = 0.95) -> tuple[float, float]:
    """The confidence interval of a standard deviation estimated with ``dof`` degrees of
    freedom from normal values (the chi-square law of ``dof * sd**2 / sigma**2``)."""
    from scipy import stats

    tail = (1 - confidence) / 2
    return (sd * math.sqrt(dof / stats.chi2.ppf(1 - tail, dof)),
            sd * math.sqrt(dof / stats.chi2.ppf(tail, dof)))


def chance_every_seed_above(effect: float, sd: float, seeds: int) -> float:
    """The chance that all ``seeds`` paired differences are above zero when each is drawn
    independently from a normal law of mean ``effect`` and standard deviation ``sd``.

    With three seeds this is the chance that :func:`paired_difference`'s 95% percentile
    interval lies above zero: the resample of the smallest difference three times has
    probability 1/27 > 2.5%, so the interval's lower end is the smallest difference."""
    from scipy import stats

    return float(stats.norm.cdf(effect / sd)) ** seeds


def chance_at_least(needed: int, tasks: int, chance: float) -> float:
    """The chance that at least ``needed`` of ``tasks`` independent tasks pass, each with
    ``chance``."""
    from scipy import stats

    return float(stats.binom.sf(needed - 1, tasks, chance))


def signed(x: float) -> str:
    """A difference as the tables print it: ``+0.012``, ``−0.034`` (a minus sign), ``–`` for NaN."""
    return "–" if math.isnan(x) else f"{x:+.3f}".replace("-", "−")


def interval_text(d: PairedDifference | PooledDifference) -> str:
    """``[low, high]`` of a paired difference's interval, or why there is none."""
    return "none (one seed)" if d.ci is None else f"[{signed(d.ci[0])}, {signed(d.ci[1])}]"
