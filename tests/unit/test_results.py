"""The results table and curves, on hand-made progress frames."""

import math

import numpy as np
import pandas as pd
import pytest

from rl_bk import metrics as M
from rl_bk.experiments.results import (
    TrialRecord,
    achievement_rates,
    crafter_score,
    curve_metrics,
    learning_curves,
    paired_with_baseline,
    smooth_over_episodes,
    steps_to_reach,
    summarize,
    trial_row,
    value_at,
    write_results,
)


def progress(steps, success, ret=None, seconds=None):
    n = len(steps)
    return pd.DataFrame(
        {
            M.ENV_STEPS: steps,
            M.SUCCESS_RATE: success,
            M.EPISODE_RETURN_MEAN: ret if ret is not None else success,
            M.TIME_TOTAL_S: seconds if seconds is not None else np.arange(1, n + 1, dtype=float),
        }
    )


def test_steps_to_reach_is_the_first_report_at_or_above_the_threshold():
    p = progress([100, 200, 300, 400], [0.5, 0.9, 0.8, 0.95])
    assert steps_to_reach(p, M.SUCCESS_RATE, 0.9) == 200
    assert math.isnan(steps_to_reach(p, M.SUCCESS_RATE, 0.99))


def test_crafter_score_by_hand():
    # exp(mean(ln(1 + 100 r))) - 1 with rates 0 and 0.99 -> sqrt(1 * 100) - 1 = 9
    assert crafter_score([0.0, 0.99]) == pytest.approx(9.0)
    assert crafter_score([1.0, 1.0]) == pytest.approx(100.0)


def test_trial_row_takes_last_values_and_throughput():
    p = progress([1000, 2000], [0.2, 0.6], seconds=[1.0, 4.0])
    row = trial_row(TrialRecord("ppo", 3, p), success_threshold=0.5)
    assert row["success_rate"] == 0.6 and row["env_steps"] == 2000
    assert row["env_steps_per_s"] == 500 and row["steps_to_success_0.5"] == 2000


def test_summary_counts_seeds_that_reached_the_threshold():
    trials = pd.DataFrame(
        [
            {"variant": "ppo", "seed": 0, "success_rate": 0.9, "steps_to_success_0.9": 100.0},
            {"variant": "ppo", "seed": 1, "success_rate": 0.7, "steps_to_success_0.9": math.nan},
        ]
    )
    s = summarize(trials).iloc[0]
    assert s["seeds"] == 2 and s["success_rate_mean"] == pytest.approx(0.8)
    assert s["steps_to_success_0.9_reached"] == 1 and s["steps_to_success_0.9_mean"] == 100


def test_curves_cover_only_steps_where_every_seed_reported():
    a = progress([100, 200, 300], [np.nan, 0.2, 0.4])  # first episode ended after step 100
    b = progress([100, 200, 300], [0.0, 0.4, 0.6])
    records = [TrialRecord("ppo", 0, a), TrialRecord("ppo", 1, b)]
    curves = learning_curves(records, curve_metrics(M.SUCCESS_RATE), points=3)
    success = curves[curves.metric == "success rate"]
    assert list(success.env_steps) == [200, 250, 300]
    assert list(success["mean"]) == pytest.approx([0.3, 0.4, 0.5])
    assert list(success["min"]) == pytest.approx([0.2, 0.3, 0.4])


def test_write_results_makes_tables_and_plot(tmp_path):
    records = [TrialRecord("ppo", s, progress([100, 200], [0.1 * s, 0.5])) for s in range(2)]
    write_results(records, tmp_path, title="t", success_threshold=0.5)
    for name in ("trials.csv", "summary.csv", "summary.md", "curves.csv", "learning_curves.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert "| ppo | 2 |" in (tmp_path / "summary.md").read_text()
    curves = pd.read_csv(tmp_path / "curves.csv")
    assert set(curves.metric) == {"episode return", "success rate"}


def test_tasks_without_success_plot_their_main_metric_and_drop_success_columns(tmp_path):
    p = progress([100, 200], [0.0, 0.0]).assign(**{M.GAME_SCORE_MEAN: [10.0, 30.0]})
    write_results(
        [TrialRecord("ppo", 0, p)],
        tmp_path,
        title="t",
        main_metric=M.GAME_SCORE_MEAN,
        success_threshold=None,
    )
    assert set(pd.read_csv(tmp_path / "curves.csv").metric) == {"episode return", "game score"}
    trials = pd.read_csv(tmp_path / "trials.csv")
    assert "success_rate" not in trials and trials["game_score_mean"].iloc[0] == 30.0


def test_metric_at_a_budget_is_the_last_report_within_it_and_unknown_past_the_run():
    p = progress([1000, 2000, 3000], [0.1, 0.5, 0.9])
    assert value_at(p, M.SUCCESS_RATE, 2500) == 0.5  # the 2000-step report, not the later one
    assert value_at(p, M.SUCCESS_RATE, 3000) == 0.9
    assert math.isnan(value_at(p, M.SUCCESS_RATE, 500))  # no report yet within 500 steps
    assert math.isnan(value_at(p, M.SUCCESS_RATE, 4000))  # the run stopped before the budget
    row = trial_row(TrialRecord("ppo", 0, p), 0.9, M.SUCCESS_RATE, budgets=[2000])
    assert row["success_rate_at_2k"] == 0.5


def test_a_threshold_counts_only_once_the_smoothing_window_is_full():
    # One lucky early episode gives success 1.0 over a window of one: not "reached".
    p = progress([1000, 2000, 3000], [1.0, 0.5, 0.95])
    p[M.EPISODES_LIFETIME] = [1, 60, 130]
    assert steps_to_reach(p, M.SUCCESS_RATE, 0.9) == 3000


def test_success_is_smoothed_over_the_last_100_episodes_weighted_by_episode_counts():
    # RLlib reports the mean over the episodes that ended in each iteration only.
    p = progress([1000, 2000, 3000, 4000], [1.0, 0.0, 0.5, 1.0])
    p[M.EPISODES_THIS_ITER] = [10, 60, 0, 50]
    s = smooth_over_episodes(p)[M.SUCCESS_RATE].tolist()
    assert s[0] == 1.0  # 10 episodes, all successes
    assert s[1] == pytest.approx(10 / 70)  # (10*1 + 60*0) / 70
    assert s[2] == pytest.approx(10 / 70)  # no episode ended: the window is unchanged
    assert s[3] == pytest.approx(50 / 110)  # 50 + 60 >= 100: the oldest 10 drop out


def test_budget_labels_stay_distinct_below_a_thousand_steps():
    from rl_bk.experiments.results import budget_label

    assert [budget_label(b) for b in (64, 128, 256, 2000, 100_000)] == [
        "64",
        "128",
        "256",
        "2k",
        "100k",
    ]


def test_greedy_evaluation_gives_its_own_columns_and_steps_to_success():
    # Evaluation reports come every few iterations; each averages its own episodes (BK: 50),
    # so steps to success counts from the first one at the threshold, with no window.
    p = progress([1000, 2000, 3000, 4000], [0.2, 0.4, 0.6, 0.7])
    p[M.EPISODES_LIFETIME] = [10, 20, 30, 40]  # too few for the training threshold
    p[M.EVAL_SUCCESS_RATE] = [np.nan, 0.92, np.nan, 0.96]
    p[M.EVAL_RETURN_MEAN] = [np.nan, 0.8, np.nan, 0.85]
    row = trial_row(TrialRecord("ppo", 0, p), 0.9, M.SUCCESS_RATE, budgets=[3000])
    assert row["eval_steps_to_success_0.9"] == 2000
    assert (row["eval_success_rate"], row["eval_return_mean"]) == (0.96, 0.85)
    assert row["eval_success_rate_at_3k"] == 0.92  # the last evaluation within 3k steps
    assert math.isnan(row["steps_to_success_0.9"])


def test_training_curves_start_once_they_average_a_full_window_and_eval_is_plotted():
    p = progress([1000, 2000, 3000], [1.0, 0.5, 0.6])  # one lucky first episode
    p[M.EPISODES_LIFETIME] = [1, 120, 240]
    p[M.EVAL_SUCCESS_RATE] = [0.0, np.nan, 0.5]
    records = [TrialRecord("ppo", 0, p)]
    metrics = curve_metrics(M.SUCCESS_RATE, records)
    assert metrics["greedy success rate (evaluation)"] == M.EVAL_SUCCESS_RATE
    curves = learning_curves(records, metrics, points=2)
    train = curves[curves.metric == "success rate"]
    assert train.env_steps.min() == 2000 and train["mean"].max() < 1.0
    greedy = curves[curves.metric == "greedy success rate (evaluation)"]
    assert list(greedy.env_steps) == [1000, 3000]


def test_oracle_knowledge_is_marked_in_the_tables(tmp_path):
    from rl_bk.experiments.results import display_label

    assert (
        display_label("bk-code backend=oracle include_mission=False")
        == "bk-code backend=oracle include_mission=False (ORACLE)"
    )
    assert display_label("bk-code backend=oracle include_mission=True").endswith(
        "(GOAL-AWARE ORACLE)"
    )
    assert display_label("bk-code backend=llamacpp") == "bk-code backend=llamacpp"
    records = [TrialRecord("bk-pref backend=oracle", 0, progress([100, 200], [0.1, 0.5]))]
    write_results(records, tmp_path, title="t", success_threshold=0.5)
    assert "| bk-pref backend=oracle (ORACLE) | 1 |" in (tmp_path / "summary.md").read_text()


def test_the_summary_names_whose_knowledge_each_variant_used(tmp_path):
    import json

    (tmp_path / "knowledge.json").write_text(
        json.dumps(
            {
                "bk-pref backend=llamacpp include_mission=False": {
                    "labels": "llamacpp/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
                    "@sha256:cc324af070c2",
                    "is_oracle": False,
                },
                "bk-goal backend=oracle include_mission=False": {
                    "labels": "oracle/rules-v2",
                    "is_oracle": True,
                },
            }
        )
    )
    records = [TrialRecord("bk-pref backend=llamacpp", 0, progress([100, 200], [0.1, 0.5]))]
    write_results(records, tmp_path, title="t", success_threshold=0.5)
    text = (tmp_path / "summary.md").read_text()
    assert (
        "- `bk-pref backend=llamacpp include_mission=False`: LLM "
        "`llamacpp/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf@sha256:cc324af070c2`"
    ) in text
    assert "- `bk-goal backend=oracle include_mission=False`: ORACLE (rules, not an LLM)" in text


def test_evaluations_repeated_by_rllib_count_once():
    # RLlib repeats an evaluation's values in the next reports; only the report that ran it
    # carries the callback's trained_env_steps.
    p = progress([1000, 2000, 3000, 4000], [0.1, 0.2, 0.3, 0.4])
    p[M.EVAL_SUCCESS_RATE] = [np.nan, 0.95, 0.95, 0.5]
    p[M.EVAL_TRAINED_ENV_STEPS] = [np.nan, 2000, np.nan, 4000]
    fresh = smooth_over_episodes(p)
    values = fresh[M.EVAL_SUCCESS_RATE]
    assert (values.iloc[1], values.iloc[3]) == (0.95, 0.5) and np.isnan(values.iloc[2])
    assert value_at(fresh, M.EVAL_SUCCESS_RATE, 3500) == 0.95  # the evaluation at 2000


def test_a_method_s_own_learner_metrics_get_columns_only_where_logged():
    p = progress([100, 200], [0.1, 0.2])
    p["learners/ptgm/prior_kl_mean"] = [0.8, 0.5]
    p["learners/ptgm/kl_reward_mean"] = [-0.04, -0.025]
    row = trial_row(TrialRecord("ptgm", 0, p), 0.9)
    assert row["ptgm_prior_kl_mean"] == 0.5 and row["ptgm_kl_reward_mean"] == -0.025
    assert "bc_held_out_accuracy" not in row
    assert "ptgm_prior_kl_mean" not in trial_row(TrialRecord("ppo", 0, progress([1], [0])), 0.9)
    shaped = progress([100, 200], [0.1, 0.2])
    shaped["learners/shaping_return_mean"] = [0.3, -0.01]  # BK's shaping, beside the env return
    assert trial_row(TrialRecord("bk-code", 0, shaped), 0.9)["shaping_return_mean"] == -0.01
    explored = progress([100, 200], [0.1, 0.2])
    explored["learners/default_policy/intrinsic_reward_mean"] = [0.02, 0.016]  # RND's, scaled
    assert trial_row(TrialRecord("rnd", 0, explored), 0.9)["intrinsic_reward_mean"] == 0.016


def test_achievement_rates_are_the_last_report_per_achievement():
    p = pd.DataFrame(
        {
            M.ENV_STEPS: [100, 200],
            M.ACHIEVEMENT_PREFIX + "collect_wood": [0.5, 0.75],
            M.ACHIEVEMENT_PREFIX + "place_table": [0.25, np.nan],  # not reported at the end
        }
    )
    assert achievement_rates(p) == {"collect_wood": 0.75, "place_table": 0.25}
    assert achievement_rates(progress([100], [0.5])) == {}


def test_a_trial_that_did_not_finish_is_marked_and_in_no_mean_nor_curve(tmp_path):
    from rl_bk.experiments.results import DONE, ERROR

    records = [
        TrialRecord("ppo", 0, progress([100, 200], [0.2, 0.4])),
        TrialRecord("ppo", 1, progress([100, 200], [0.6, 0.8])),
        TrialRecord("ppo", 2, progress([100], [1.0]), status=ERROR),
    ]
    summary = write_results(records, tmp_path, title="t")
    trials = pd.read_csv(tmp_path / "trials.csv")
    assert list(trials["status"]) == [DONE, DONE, ERROR]  # every trial has its row
    assert summary["seeds"].tolist() == [2]  # finished seeds only
    assert summary["success_rate_mean"].iloc[0] == pytest.approx(0.6)  # (0.4 + 0.8) / 2
    curves = pd.read_csv(tmp_path / "curves.csv")
    assert curves[curves.metric == "success rate"]["max"].max() <= 0.8  # seed 2's 1.0 is out
    assert "1 trial(s) did not finish" in (tmp_path / "summary.md").read_text()


def test_a_resumed_trial_keeps_the_reports_of_the_branch_its_weights_went_on_with():
    from rl_bk.experiments.results import without_superseded_reports

    # stopped after iteration 5, resumed from the checkpoint at iteration 2: 3-5 come twice
    resumed = pd.DataFrame(
        {
            "training_iteration": [1, 2, 3, 4, 5, 3, 4, 5, 6],
            M.ENV_STEPS: [10, 20, 30, 40, 50, 31, 41, 51, 61],
            M.SUCCESS_RATE: [0.0, 0.1, 0.9, 0.9, 0.9, 0.2, 0.3, 0.4, 0.5],
        }
    )
    kept = without_superseded_reports(resumed)
    assert kept["training_iteration"].tolist() == [1, 2, 3, 4, 5, 6]
    assert kept[M.SUCCESS_RATE].tolist() == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    # a stored curve has env steps only: a row ahead of a later one goes, a NaN row stays
    stored = pd.DataFrame(
        {
            M.ENV_STEPS: [10, 20, np.nan, 40, 50, 35, 45],
            M.SUCCESS_RATE: [0.0, 0.1, 0.1, 0.9, 0.9, 0.2, 0.3],
        }
    )
    assert without_superseded_reports(stored)[M.SUCCESS_RATE].tolist() == [0.0, 0.1, 0.1, 0.2, 0.3]
    plain = progress([10, 20, 30], [0.1, 0.2, 0.3])
    assert without_superseded_reports(plain) is plain  # an unbroken run is left as it is


def test_tables_read_from_a_tune_folder_drop_a_resume_s_superseded_reports(tmp_path):
    import json

    from rl_bk.experiments.results import records_from_tune_dir

    trial = tmp_path / "trial_0"
    trial.mkdir()
    (trial / "params.json").write_text(
        json.dumps({"variant": {"method": "ppo", "params": {}}, "seed": 3})
    )
    # restored from the checkpoint at iteration 1 after iteration 3 (Tune counts
    # iterations_since_restore from 1 again)
    rows = [
        {
            "training_iteration": i,
            "iterations_since_restore": n,
            M.ENV_STEPS: 100 * i + 7 * (j > 2),
            "env_runners": {"success_rate": s},
        }
        for j, (i, n, s) in enumerate(
            [(1, 1, 0.1), (2, 2, 0.9), (3, 3, 0.9), (2, 1, 0.2), (3, 2, 0.3)]
        )
    ]
    (trial / "result.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (record,) = records_from_tune_dir(tmp_path)
    assert record.seed == 3
    assert record.progress["training_iteration"].tolist() == [1, 2, 3]
    assert record.progress[M.SUCCESS_RATE].tolist() == [0.1, 0.2, 0.3]
    assert record.restored_from == (100.0,)  # iteration 1's env steps


def test_restore_points_are_the_checkpoints_a_trial_went_on_from():
    from rl_bk.experiments.results import restore_points

    # restored at iteration 3 (from 2) and at iteration 5 (from 4); kept reports only
    kept = pd.DataFrame(
        {
            "training_iteration": [1, 2, 3, 4, 5, 6],
            "iterations_since_restore": [1, 2, 1, 2, 1, 2],
            M.ENV_STEPS: [10, 20, 31, 41, 52, 62],
        }
    )
    assert restore_points(kept) == [20.0, 41.0]
    kept["iterations_since_restore"] = [1, 2, 3, 4, 5, 6]  # ran in one go
    assert restore_points(kept) == []
    assert restore_points(progress([10, 20], [0.1, 0.2])) == []  # a stored curve: unknown


def test_each_variant_is_paired_with_the_first_by_seed_with_a_t_interval():
    """Hand-checked: differences 0.1, 0.2, 0.0 have mean 0.1 and sd 0.1; t(2 dof) = 4.303,
    so the 95% interval is 0.1 +/- 4.303 * 0.1 / sqrt(3) = [-0.148, +0.348]. A seed one side
    lacks (NaN, or a trial that did not finish) is not paired; one seed gives no interval."""
    trials = pd.DataFrame(
        {
            "variant": ["ppo"] * 3 + ["bk-pref"] * 3 + ["rnd"] * 2,
            "seed": [0, 1, 2, 0, 1, 2, 0, 1],
            "status": ["done"] * 6 + ["done", "error"],
            "success_rate_auc": [0.5, 0.6, 0.7, 0.6, 0.8, 0.7, 0.9, 0.9],
            "eval_success_auc": [0.1, 0.2, 0.3, 0.3, 0.2, float("nan"), 0.1, 0.1],
        }
    )
    rows = paired_with_baseline(trials).set_index(["variant", "area under"])
    assert rows.loc[("bk-pref", "success rate"), "mean difference"] == "+0.100"
    assert rows.loc[("bk-pref", "success rate"), "95% t interval"] == "[−0.148, +0.348]"
    assert rows.loc[("bk-pref", "eval success"), "paired seeds"] == 2
    assert rows.loc[("rnd", "success rate"), "paired seeds"] == 1
    assert rows.loc[("rnd", "success rate"), "95% t interval"] == "none (one seed)"
