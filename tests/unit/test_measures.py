"""The learning-curve measures of rl_bk/experiments/measures.py on hand-computed cases: the
normalised area up to a budget (and when a curve is incomplete), the value at a budget, and
the paired difference by seed with its t interval; and, by simulation, that every 95%
interval the studies print covers a known mean in about 95% of draws at 3, 5 and 10 seeds."""

import math

import pytest

from rl_bk.experiments.measures import (
    curve_points,
    normalised_area,
    paired_difference,
    value_at_budget,
)


def test_area_is_the_mean_of_the_evaluations_up_to_the_budget():
    # (0.1 + 0.4 + 0.7) / 3 = 0.4; the point past the budget is left out.
    curve = [(100.0, 0.1), (200.0, 0.4), (300.0, 0.7), (400.0, 1.0)]
    area = normalised_area(curve, 300, tolerance=50)
    assert area.value == pytest.approx(0.4)
    assert area.points == 3
    assert area.last_step == 300.0
    assert area.complete


def test_last_evaluation_short_of_the_budget_counts_within_the_tolerance():
    curve = [(90.0, 0.2), (190.0, 0.4), (290.0, 0.9), (390.0, 1.0)]
    area = normalised_area(curve, 300, tolerance=20)
    assert area.value == pytest.approx(0.5)  # (0.2 + 0.4 + 0.9) / 3
    assert area.complete
    assert value_at_budget(curve, 300, tolerance=20) == 0.9


def test_a_point_exactly_one_tolerance_short_of_the_budget_completes_the_curve():
    # The tolerance is one evaluation interval: a run evaluated every 100 steps whose last
    # evaluation falls 100 steps before the budget has covered it.
    curve = [(100.0, 0.2), (200.0, 0.6)]
    assert normalised_area(curve, 300, tolerance=100).complete
    assert value_at_budget(curve, 300, tolerance=100) == 0.6
    assert not normalised_area(curve, 300, tolerance=99).complete


def test_points_out_of_order_are_read_in_env_step_order():
    # The value at the budget is the point with the most env steps up to it, not the last
    # listed nor the best.
    curve = [(300.0, 0.5), (100.0, 0.9), (200.0, 0.1)]
    area = normalised_area(curve, 300, tolerance=50)
    assert area.last_step == 300.0 and area.complete
    assert value_at_budget(curve, 300, tolerance=50) == 0.5


def test_curve_that_stops_before_the_budget_is_flagged_incomplete():
    curve = [(100.0, 0.1), (200.0, 0.4)]
    area = normalised_area(curve, 300, tolerance=50)
    assert not area.complete
    assert area.value == pytest.approx(0.25)  # what it has, flagged, not passed as complete
    assert math.isnan(value_at_budget(curve, 300, tolerance=50))


def test_curve_with_no_point_before_the_budget_has_no_area():
    area = normalised_area([(500.0, 1.0)], 300, tolerance=50)
    assert math.isnan(area.value) and area.points == 0 and not area.complete


def test_curve_points_skip_reports_without_an_evaluation():
    assert curve_points([1, 2, 3, 4], [None, 0.5, float("nan"), 0.7]) == [(2.0, 0.5), (4.0, 0.7)]


def test_curve_points_refuse_columns_of_different_lengths():
    # A progress column cut short would otherwise pair values with the wrong env steps.
    with pytest.raises(ValueError):
        curve_points([1, 2, 3], [0.5, 0.7])


def test_paired_difference_uses_only_the_seeds_both_have():
    method = {0: 0.5, 1: 0.6, 2: 0.7, 3: 0.9}
    baseline = {0: 0.4, 1: 0.4, 2: 0.4, 5: 0.0}
    d = paired_difference(method, baseline)
    assert d.seeds == [0, 1, 2]
    assert d.diffs == pytest.approx([0.1, 0.2, 0.3])
    assert d.mean == pytest.approx(0.2)
    low, high = d.ci
    assert low < d.mean < high


def test_paired_interval_is_the_student_t_interval_of_the_differences():
    # differences 0.1, 0.2, 0.3: sd 0.1, t(0.975, 2 df) = 4.3027, half-width 4.3027 * 0.1 / sqrt 3
    d = paired_difference({0: 0.5, 1: 0.6, 2: 0.7}, {0: 0.4, 1: 0.4, 2: 0.4})
    half = 4.302653 * 0.1 / math.sqrt(3)
    assert d.ci == pytest.approx((0.2 - half, 0.2 + half), abs=1e-6)
    # wider than the range of the differences, which a percentile bootstrap would print
    assert d.ci[0] < 0.1 and d.ci[1] > 0.3


def test_equal_positive_differences_give_an_interval_above_zero():
    d = paired_difference({0: 0.5, 1: 0.6, 2: 0.7}, {0: 0.4, 1: 0.5, 2: 0.6})
    assert d.mean == pytest.approx(0.1)
    low, high = d.ci
    assert low == pytest.approx(0.1) and high == pytest.approx(0.1)


def test_three_positive_seeds_are_not_enough_for_an_interval_above_zero():
    # every seed above zero, yet the spread is large: the t interval includes zero
    d = paired_difference(dict(enumerate((0.01, 0.5, 0.6))), dict.fromkeys(range(3), 0.0))
    assert all(x > 0 for x in d.diffs)
    assert d.ci[0] < 0 < d.ci[1]


def test_two_shared_seeds_give_a_twelve_point_seven_t_interval():
    from rl_bk.experiments.measures import interval_text

    d = paired_difference({0: 0.5, 1: 0.3}, {0: 0.4, 1: 0.8})  # +0.1, -0.5: mean -0.2
    # sd 0.6 / sqrt 2, t(0.975, 1 df) = 12.706: half-width 12.706 * 0.3
    assert d.ci == pytest.approx((-0.2 - 12.7062 * 0.3, -0.2 + 12.7062 * 0.3), abs=1e-3)
    assert interval_text(d) == "[−4.012, +3.612]"  # as the tables print it, low end first


def test_a_single_shared_seed_gives_no_interval():
    d = paired_difference({0: 0.7, 1: 0.8}, {1: 0.5, 2: 0.1})
    assert d.seeds == [1]
    assert d.mean == pytest.approx(0.3)
    assert d.ci is None


def test_a_nan_value_leaves_its_seed_out():
    d = paired_difference({0: 0.5, 1: math.nan, 2: 0.7}, {0: 0.4, 1: 0.4, 2: 0.4})
    assert d.seeds == [0, 2]
    d = paired_difference({0: 0.5, 1: 0.6, 2: 0.7}, {0: 0.4, 1: math.nan, 2: 0.4})
    assert d.seeds == [0, 2] and d.mean == pytest.approx(0.2)


def test_unpaired_difference_is_welchs_interval():
    from rl_bk.experiments.measures import unpaired_difference

    d = unpaired_difference([0.3, 0.2, float("nan"), 0.1], [0.1, 0.1])
    assert d.mean == pytest.approx(0.2 - 0.1)  # the NaN run is left out
    # the baseline has no spread: Welch's interval is the method group's own t interval
    # (2 degrees of freedom), shifted by the baseline's mean
    assert d.ci == pytest.approx(
        (0.1 - 4.302653 * 0.1 / math.sqrt(3), 0.1 + 4.302653 * 0.1 / math.sqrt(3)), abs=1e-6
    )
    assert unpaired_difference([0.5], [0.1, 0.2]).ci is None  # one run: no interval
    assert unpaired_difference([0.1, 0.2], [0.5]).ci is None  # on either side
    assert unpaired_difference([0.2, 0.2], [0.1, 0.1]).ci == pytest.approx((0.1, 0.1))
    assert math.isnan(unpaired_difference([], [0.1]).mean)


def test_pooled_difference_takes_tasks_as_the_unit():
    from rl_bk.experiments.measures import pooled_difference

    three = paired_difference({0: 0.4, 1: 0.4, 2: 0.4}, {0: 0.2, 1: 0.2, 2: 0.2})  # +0.2 each
    two = paired_difference({0: 0.1, 1: 0.1}, {0: 0.1, 1: 0.1})  # 0.0 each
    d = pooled_difference({"a": three, "b": two})
    assert d.tasks == ["a", "b"] and len(d.diffs) == 5 and d.task_means == pytest.approx([0.2, 0])
    assert d.mean == pytest.approx(0.1)  # (0.2 + 0.0) / 2, not the mean of 5 differences (0.12)
    # no seed-to-seed spread at all, yet the tasks disagree: the interval is the t interval of
    # the two task means (1 degree of freedom), not a point at 0.1
    assert d.ci == pytest.approx((0.1 - 12.7062 * 0.1, 0.1 + 12.7062 * 0.1), abs=1e-3)


def test_pooled_interval_of_one_task_is_its_own_and_one_seed_tasks_count_as_tasks():
    from rl_bk.experiments.measures import interval_text, pooled_difference

    mixed = paired_difference({0: 0.3, 1: 0.1, 2: 0.2}, {0: 0.1, 1: 0.2, 2: 0.1})  # +.2 −.1 +.1
    one = pooled_difference({"a": mixed})
    assert one.ci == pytest.approx(mixed.ci)  # one task: the task's own interval
    four = pooled_difference({t: mixed for t in "abcd"})
    assert four.mean == pytest.approx(mixed.mean)
    assert four.ci == pytest.approx((mixed.mean, mixed.mean))  # four equal task means
    single = paired_difference({0: 0.5}, {0: 0.1})  # +0.4: one task mean like any other
    d = pooled_difference({"a": mixed, "s": single})
    assert d.mean == pytest.approx((mixed.mean + 0.4) / 2)
    assert d.ci[0] < d.mean < d.ci[1]
    assert pooled_difference({"s": single}).ci is None
    assert interval_text(pooled_difference({"s": single})) == "none (one seed)"
    assert math.isnan(pooled_difference({}).mean)


DRAWS = 2_000


def _covered(intervals, mean) -> float:
    return sum(low <= mean <= high for low, high in intervals) / len(intervals)


@pytest.mark.parametrize("seeds", [3, 5, 10])
def test_paired_interval_covers_the_true_mean_95_times_in_100(seeds):
    import numpy as np

    rng = np.random.default_rng(seeds)
    effect = 0.05
    # a per-seed level that both runs share (pairing removes it) and each run's own noise
    level = rng.normal(0.3, 0.2, (DRAWS, seeds))
    method = level + effect + rng.normal(0, 0.08, (DRAWS, seeds))
    baseline = level + rng.normal(0, 0.08, (DRAWS, seeds))
    intervals = [
        paired_difference(dict(enumerate(m)), dict(enumerate(b))).ci
        for m, b in zip(method, baseline)
    ]
    assert 0.93 <= _covered(intervals, effect) <= 0.97


@pytest.mark.parametrize("tasks", [3, 5, 10])
def test_pooled_interval_covers_the_mean_over_tasks_95_times_in_100(tasks):
    import numpy as np

    from rl_bk.experiments.measures import pooled_difference

    rng = np.random.default_rng(100 + tasks)
    effect = 0.05
    # each task's own effect around the mean effect, then three seeds' differences around it
    per_task = rng.normal(effect, 0.06, (DRAWS, tasks))
    diffs = per_task[:, :, None] + rng.normal(0, 0.1, (DRAWS, tasks, 3))
    zero = dict.fromkeys(range(3), 0.0)
    intervals = [
        pooled_difference(
            {t: paired_difference(dict(enumerate(task)), zero) for t, task in enumerate(draw)}
        ).ci
        for draw in diffs
    ]
    assert 0.93 <= _covered(intervals, effect) <= 0.97


@pytest.mark.parametrize("runs", [3, 5, 10])
@pytest.mark.parametrize("spreads", [(0.1, 0.1), (0.05, 0.15)])
def test_unpaired_interval_covers_the_difference_of_means_95_times_in_100(runs, spreads):
    import numpy as np

    from rl_bk.experiments.measures import unpaired_difference

    rng = np.random.default_rng(runs)
    a = rng.normal(0.3, spreads[0], (DRAWS, runs))
    b = rng.normal(0.2, spreads[1], (DRAWS, runs))
    intervals = [unpaired_difference(x, y).ci for x, y in zip(a, b)]
    assert 0.93 <= _covered(intervals, 0.1) <= 0.97


def test_within_task_sd_pools_spread_around_each_groups_own_mean():
    from rl_bk.experiments.measures import within_task_sd

    # deviations (-1, 0, +1) and (-2, +2): squares 2 + 8 over 2 + 1 degrees of freedom;
    # a one-seed group adds nothing, and the groups' means (10 and -5) do not enter
    sd, dof = within_task_sd([[9.0, 10.0, 11.0], [-7.0, -3.0], [4.0]])
    assert dof == 3 and math.isclose(sd, math.sqrt(10 / 3))
    assert math.isnan(within_task_sd([[1.0]])[0])


def test_chance_every_seed_above_is_what_a_three_seed_percentile_interval_passed():
    from rl_bk.experiments.measures import chance_every_seed_above

    # no effect: each seed is above zero half the time, all three an eighth of the time
    assert math.isclose(chance_every_seed_above(0.0, 0.1, 3), 0.125)
    # an effect of one standard deviation: Phi(1) = 0.8413 per seed
    assert math.isclose(chance_every_seed_above(0.1, 0.1, 3), 0.8413447**3, rel_tol=1e-6)


def test_chance_interval_above_matches_a_simulation_of_paired_difference():
    import numpy as np

    from rl_bk.experiments.measures import chance_interval_above

    assert math.isclose(chance_interval_above(0.0, 0.1, 3), 0.025, rel_tol=1e-6)
    rng = np.random.default_rng(7)
    draws = rng.normal(0.1, 0.1, (DRAWS, 3))
    zero = dict.fromkeys(range(3), 0.0)
    passed = sum(paired_difference(dict(enumerate(d)), zero).ci[0] > 0 for d in draws) / DRAWS
    expected = chance_interval_above(0.1, 0.1, 3)
    assert abs(passed - expected) < 3 * math.sqrt(expected * (1 - expected) / DRAWS)
    # a far smaller chance than every seed above zero, which the percentile interval passed
    assert expected < 0.3


def test_chance_at_least_is_a_binomial_tail():
    from rl_bk.experiments.measures import chance_at_least

    # 3 of 6 at 1/8: 1 - P(0) - P(1) - P(2)
    p = 1 / 8
    expected = 1 - sum(math.comb(6, k) * p**k * (1 - p) ** (6 - k) for k in range(3))
    assert math.isclose(chance_at_least(3, 6, p), expected)
    assert chance_at_least(0, 6, p) == 1.0 and chance_at_least(7, 6, 0.99) == 0.0


def test_sd_interval_is_the_chi_square_interval():
    from rl_bk.experiments.measures import sd_interval

    # 12 degrees of freedom: chi-square quantiles 4.4038 (2.5%) and 23.3367 (97.5%)
    low, high = sd_interval(1.0, 12)
    assert math.isclose(low, math.sqrt(12 / 23.3367), rel_tol=1e-4)
    assert math.isclose(high, math.sqrt(12 / 4.4038), rel_tol=1e-4)
