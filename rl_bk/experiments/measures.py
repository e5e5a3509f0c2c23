"""Summarising learning curves, and comparing methods paired by seed: the normalised area
under a curve up to a budget, which uses the whole curve and so can tell methods apart where a
threshold no run reaches cannot; the Student t interval of the mean per-seed difference
(:func:`t_interval`), whose coverage is the stated one at three seeds where a bootstrap's is
not; and :func:`pooled_difference`, with tasks as the unit. Details: docs/methods.md#results.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scipy import stats

Point = tuple[float, float]


def curve_points(steps: Iterable[float | None], values: Iterable[float | None]) -> list[Point]:
    """The ``(env_steps, value)`` points of two aligned columns (as a results JSON keeps a
    trial's progress), leaving out the reports without a value (None or NaN): an evaluation
    runs only every few reports."""
    return [
        (float(s), float(v))
        for s, v in zip(steps, values, strict=True)
        if s is not None and v is not None and not math.isnan(v)
    ]


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


def t_interval(values: Iterable[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """The Student t interval of the mean of ``values``: ``mean ± t * sd / sqrt(n)`` with
    ``n - 1`` degrees of freedom (``scipy.stats.t``). Its coverage is the stated one at any
    ``n >= 2`` when the values are independent draws from one normal law, which is what a
    handful of seeds needs: a percentile bootstrap over three values draws the smallest one
    three times in one resample of 27, so its 95% interval is the range of the values and
    covers the mean about three times in four. None below two values; when every value is
    the same, the interval is that value."""
    xs = [float(x) for x in values]
    n = len(xs)
    if n < 2:
        return None
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = float(stats.t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
    return (mean - half, mean + half)


@dataclass(frozen=True)
class PairedDifference:
    """Method minus baseline, seed by seed (:func:`paired_difference`)."""

    seeds: list[int]  # the seeds both have, in order
    diffs: list[float]  # method - baseline on each of those seeds
    mean: float  # the mean of ``diffs``; NaN when no seed is shared
    ci: tuple[float, float] | None  # t interval of the mean (:func:`t_interval`); None below 2
    confidence: float = 0.95


def paired_difference(
    method: Mapping[int, float], baseline: Mapping[int, float], *, confidence: float = 0.95
) -> PairedDifference:
    """The per-seed difference ``method[seed] - baseline[seed]`` of a per-run statistic (an
    area, a value at a budget, env steps to a threshold), over the seeds both have a value for
    (a missing or NaN value leaves that seed out: pairing by seed removes what a seed does to
    both runs, so an unpaired run is not used), their mean, and the Student t interval of the
    mean difference over the seeds (:func:`t_interval`; ``n - 1`` degrees of freedom).

    The interval's coverage is the stated one when the paired differences are independent and
    about normal; with three seeds it is wide (``t`` at 2 degrees of freedom is 4.30), and
    that width is what three seeds know. With a single shared seed there is no interval
    (``ci`` None), and none is made up.
    """
    seeds = sorted(
        s
        for s in method.keys() & baseline.keys()
        if not (math.isnan(method[s]) or math.isnan(baseline[s]))
    )
    diffs = [float(method[s] - baseline[s]) for s in seeds]
    if not diffs:
        return PairedDifference([], [], math.nan, None, confidence)
    return PairedDifference(
        seeds, diffs, sum(diffs) / len(diffs), t_interval(diffs, confidence), confidence
    )


@dataclass(frozen=True)
class PooledDifference:
    """Method minus baseline over several tasks, each paired by seed (:func:`pooled_difference`)."""

    tasks: list[str]  # the tasks pooled, in order
    diffs: list[float]  # every (task, seed) difference, task by task
    mean: float  # the mean over tasks of each task's mean difference; NaN with no task
    ci: tuple[float, float] | None  # t interval over the task means; see pooled_difference
    confidence: float = 0.95
    task_means: list[float] | None = None  # each task's mean difference, in ``tasks`` order


def pooled_difference(
    per_task: Mapping[str, PairedDifference], *, confidence: float = 0.95
) -> PooledDifference:
    """The mean paired difference over tasks (each task weighs the same), with tasks as the
    unit: the Student t interval over the tasks' mean differences (``tasks - 1`` degrees of
    freedom). A task's mean carries both its own seeds' spread and how the effect differs
    from task to task, so the interval is about tasks like these, not only about these tasks'
    seeds; resampling seeds within fixed tasks leaves the task-to-task spread out and is too
    narrow for a claim about a method. With one task it is that task's own interval over its
    seeds; with one task of one seed there is none."""
    tasks = [t for t, d in per_task.items() if d.diffs]
    if not tasks:
        return PooledDifference([], [], math.nan, None, confidence, [])
    means = [sum(per_task[t].diffs) / len(per_task[t].diffs) for t in tasks]
    diffs = [float(x) for t in tasks for x in per_task[t].diffs]
    ci = (
        t_interval(means, confidence)
        if len(tasks) > 1
        else t_interval(per_task[tasks[0]].diffs, confidence)
    )
    return PooledDifference(tasks, diffs, sum(means) / len(means), ci, confidence, means)


def unpaired_difference(
    method: Iterable[float], baseline: Iterable[float], *, confidence: float = 0.95
) -> PairedDifference:
    """``mean(method) - mean(baseline)`` for runs that share nothing to pair them by (two
    implementations seeding their RNGs their own way), with Welch's t interval (each group's
    own variance; Welch-Satterthwaite degrees of freedom), whose coverage holds at a few runs
    a side whether or not the two spreads are equal. ``seeds`` and ``diffs`` are left empty;
    one run on either side gives no interval."""
    a = [float(v) for v in method if not math.isnan(v)]
    b = [float(v) for v in baseline if not math.isnan(v)]
    if not a or not b:
        return PairedDifference([], [], math.nan, None, confidence)
    mean = sum(a) / len(a) - sum(b) / len(b)
    ci = None
    if len(a) > 1 and len(b) > 1:
        va = sum((x - sum(a) / len(a)) ** 2 for x in a) / (len(a) - 1) / len(a)
        vb = sum((x - sum(b) / len(b)) ** 2 for x in b) / (len(b) - 1) / len(b)
        if va + vb == 0:
            ci = (mean, mean)
        else:
            dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
            half = float(stats.t.ppf((1 + confidence) / 2, dof)) * math.sqrt(va + vb)
            ci = (mean - half, mean + half)
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
    tail = (1 - confidence) / 2
    return (
        sd * math.sqrt(dof / stats.chi2.ppf(1 - tail, dof)),
        sd * math.sqrt(dof / stats.chi2.ppf(tail, dof)),
    )


def chance_every_seed_above(effect: float, sd: float, seeds: int) -> float:
    """The chance that all ``seeds`` paired differences are above zero when each is drawn
    independently from a normal law of mean ``effect`` and standard deviation ``sd``.

    With three seeds this is the chance that a 95% percentile bootstrap interval (what the
    studies printed before :func:`t_interval`) lies above zero: the resample of the smallest
    difference three times has probability 1/27 > 2.5%, so that interval's lower end is the
    smallest difference. With no effect it passes one time in eight."""
    return float(stats.norm.cdf(effect / sd)) ** seeds


def chance_interval_above(effect: float, sd: float, seeds: int, confidence: float = 0.95) -> float:
    """The chance that :func:`paired_difference`'s t interval lies above zero when the
    ``seeds`` paired differences are drawn independently from a normal law of mean ``effect``
    and standard deviation ``sd``: the noncentral t law of the t statistic (``seeds - 1``
    degrees of freedom, noncentrality ``effect * sqrt(seeds) / sd``) above the critical
    value. With no effect it is ``(1 - confidence) / 2``."""
    critical = stats.t.ppf((1 + confidence) / 2, seeds - 1)
    return float(stats.nct.sf(critical, seeds - 1, effect * math.sqrt(seeds) / sd))


def chance_at_least(needed: int, tasks: int, chance: float) -> float:
    """The chance that at least ``needed`` of ``tasks`` independent tasks pass, each with
    ``chance``."""
    return float(stats.binom.sf(needed - 1, tasks, chance))


def signed(x: float) -> str:
    """A difference as the tables print it: ``+0.012``, ``−0.034`` (a minus sign), ``–`` for NaN."""
    return "–" if math.isnan(x) else f"{x:+.3f}".replace("-", "−")


def interval_text(d: PairedDifference | PooledDifference) -> str:
    """``[low, high]`` of a paired difference's interval, or why there is none."""
    return "none (one seed)" if d.ci is None else f"[{signed(d.ci[0])}, {signed(d.ci[1])}]"
