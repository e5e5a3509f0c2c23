"""The plan of BK's 5M and transfer study (bench/bk_budget_transfer.py): every planned trial
runs once, in the layout the plan says, on the narrowed task."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from bench import bk_budget_transfer as study


def test_every_planned_trial_runs_exactly_once():
    planned = Counter(
        study.trial_id(name, m, s)
        for name, seed, methods in study.batches()
        for m in methods
        for s in [seed]
    )
    expected = {
        study.trial_id(name, m, s)
        for name, *_ in study.STUDIES
        for m in study.METHODS
        for s in study.SEEDS
    }
    assert set(planned) == expected and set(planned.values()) == {1}
    assert len(expected) == 7 * 4 * 3


def test_every_trial_runs_in_a_pair_on_one_cpu_and_the_transfer_suite_comes_first():
    sizes = {
        name: {len(methods) for n, _, methods in study.batches() if n == name}
        for name, *_ in study.STUDIES
    }
    assert set().union(*sizes.values()) == {2}
    order = list(dict.fromkeys(name for name, _, _ in study.batches()))
    assert order[-1] == "redball-s20-5m" and len(order) == 7
    long_one = study.study_task("babyai-gotolocal-redball-s20", 5_000_000, [5_000_000], 2, 2)
    assert long_one.env_runners.num_env_runners == 0 and long_one.learner.threads == 1
    pair = study.study_task("babyai-gotolocal-redkey-s28", 500_000, [500_000], 1, 2)
    assert pair.env_runners.num_env_runners == 0 and pair.learner.threads == 1
    assert pair.seeds == [1] and pair.stop.num_env_steps == 500_000
    assert pair.sweep["ppo"] == {"extrinsic_coeff": [10.0]}  # BK's PPO only
    assert pair.sweep["bk-goal"] == {"include_mission": [False]}  # task-agnostic only
    assert pair.env == "BabyAI-Text-GoToLocal-RedKey-S28-v0"


def test_the_report_says_which_build_of_the_knowledge_each_trial_used():
    trials = {
        study.trial_id("redkey-s23", "ppo", 0): {},
        study.trial_id("redkey-s23", "bk-pref", 0): {},  # before fingerprints were kept
        study.trial_id("redkey-s23", "bk-pref", 1): {"knowledge": {"fingerprint": "ab12"}},
        study.trial_id("redkey-s23", "bk-pref", 2): {"knowledge": {"fingerprint": "ab12"}},
        study.trial_id("redkey-s23", "bk-goal", 2): {"knowledge": {"fingerprint": "cd34"}},
    }
    (line, blank) = study.knowledge_lines("redkey-s23", trials)
    assert "bk-pref not recorded (an earlier machine) (seed 0)" in line
    assert "bk-pref `ab12` (seeds 1, 2)" in line and "bk-goal `cd34` (seed 2)" in line
    assert "ppo" not in line and blank == ""
    assert study.knowledge_lines("purplekey-s30", trials) == []


def test_the_knowledge_a_run_used_is_read_from_its_knowledge_json(tmp_path):
    from rl_bk.experiments.artifacts import DONE, artifact_fingerprint

    assert study.knowledge_used(tmp_path) == {}  # a run without bk-* trials
    built, gone = tmp_path / "built", tmp_path / "gone"
    built.mkdir()
    (built / "model.pt").write_bytes(b"\x01")
    (built / DONE).write_text("{}")
    (tmp_path / "knowledge.json").write_text(
        json.dumps(
            {
                "bk-code backend=oracle": {
                    "path": str(gone),
                    "fingerprint": "ab12",
                    "dataset_fingerprint": "ds01",
                },
                "bk-pref backend=oracle": {"path": str(built)},  # recorded before fingerprints were
                "bk-goal backend=oracle": {"path": str(gone)},  # the same, its cache not here
            }
        )
    )
    assert study.knowledge_used(tmp_path) == {
        "bk-code": {"fingerprint": "ab12", "dataset_fingerprint": "ds01"},
        "bk-pref": {"fingerprint": artifact_fingerprint(built), "dataset_fingerprint": None},
    }


def test_a_trial_short_of_its_env_steps_is_refused_by_name(monkeypatch, tmp_path):
    from rl_bk import metrics as M

    def curves(label, seed, last):
        return {
            "label": label,
            "seed": seed,
            "progress": {M.ENV_STEPS: [None, 1024.0, last]},
            "restored_from": [],
        }

    found = [
        curves("ppo extrinsic_coeff=10.0", 0, 500_000.0),
        curves("bk-code backend=oracle", 0, 500_594.0),
    ]
    monkeypatch.setattr("bench.study.trial_curves", lambda run_dir, extra=(): found)
    assert set(study.finished_trials(tmp_path, 500_000)) == {"ppo", "bk-code"}
    found.append(curves("bk-pref backend=oracle", 2, 499_000.0))
    with pytest.raises(SystemExit, match=r"bk-pref backend=oracle seed 2 .* stopped at 499,000"):
        study.finished_trials(tmp_path, 500_000)


def _flat(value: float, steps: int) -> dict:
    """A trial whose greedy success is ``value`` at every evaluation to ``steps``."""
    from rl_bk import metrics as M

    at = list(range(20_000, steps + 1, 20_000))
    return {"progress": {M.ENV_STEPS: at, M.EVAL_SUCCESS_RATE: [value] * len(at)}}


def _study(trials: dict, name: str, steps: int, ppo: list[float], **methods: list[float]):
    for method, values in {"ppo": ppo, **methods}.items():
        for seed, v in enumerate(values):
            trials[study.trial_id(name, method.replace("_", "-"), seed)] = _flat(v, steps)


def test_the_goal_counts_a_task_only_when_its_t_interval_is_above_zero():
    trials: dict = {}
    _study(
        trials,
        "purpleball-s23",
        500_000,
        [0.2, 0.2, 0.2],
        bk_code=[0.3, 0.3, 0.3],
        bk_pref=[0.3, 0.3, 0.1],
        bk_goal=[0.21, 0.7, 0.8],
    )
    _study(trials, "redkey-s23", 500_000, [0.2, 0.2], bk_code=[0.9, 0.9])  # seed 2 not in
    tally = study.goal_tally(trials)
    assert tally["bk-code"]["decided"] == ["purpleball-s23"]
    assert tally["bk-code"]["above"] == ["purpleball-s23"]
    # every seed above ppo (what the plan's percentile interval passed), but so spread that
    # the t interval includes zero: above under the plan's reading only
    assert tally["bk-goal"]["every_seed_above"] == ["purpleball-s23"]
    assert tally["bk-goal"]["above"] == []
    # one seed below ppo puts the interval's lower end below zero, though the mean is above
    assert tally["bk-pref"]["above"] == [] and tally["bk-pref"]["mean_above_zero"] == [
        "purpleball-s23"
    ]
    assert {t["verdict"] for t in tally.values()} == {"open"}
    assert tally["bk-code"]["budget"] is None


def test_a_seed_that_ties_ppo_keeps_the_task_from_counting():
    # Both at the floor on one seed (both 0.0 greedy success, common on a hard task): the
    # interval's lower end is exactly zero, which is not above it.
    trials: dict = {}
    _study(
        trials,
        "purpleball-s23",
        500_000,
        [0.0, 0.2, 0.2],
        bk_code=[0.0, 0.4, 0.4],
        bk_pref=[0.0, 0.2, 0.2],
    )
    tally = study.goal_tally(trials)
    assert tally["bk-code"]["decided"] == ["purpleball-s23"] and tally["bk-code"]["above"] == []
    assert tally["bk-code"]["mean_above_zero"] == ["purpleball-s23"]
    assert tally["bk-pref"]["mean_above_zero"] == []  # a mean of exactly zero is not above


def test_the_goal_is_decided_when_it_can_no_longer_change():
    trials: dict = {}
    for i, name in enumerate(study.TRANSFER[:4]):  # above ppo on: bk-code 3, bk-pref none,
        _study(
            trials,
            name,
            500_000,
            [0.2] * 3,  # bk-goal the first only
            bk_code=[0.5 if i < 3 else 0.1] * 3,
            bk_pref=[0.1] * 3,
            bk_goal=[0.5 if i == 0 else 0.1] * 3,
        )
    tally = study.goal_tally(trials)
    assert tally["bk-code"]["verdict"] == "open"  # the 5M study is still to come
    assert tally["bk-pref"]["verdict"] == "not met"  # at most 2 of 6 now
    assert tally["bk-goal"]["verdict"] == "open"  # 3 of 6 still possible, just
    _study(
        trials,
        study.BUDGET_STUDY,
        5_000_000,
        [0.5] * 3,
        bk_code=[0.6] * 3,
        bk_pref=[0.6] * 3,
        bk_goal=[0.4] * 3,
    )
    tally = study.goal_tally(trials)
    assert tally["bk-code"]["verdict"] == "met" and tally["bk-code"]["budget"] is True
    assert tally["bk-pref"]["verdict"] == "not met"
    assert tally["bk-goal"]["verdict"] == "not met" and tally["bk-goal"]["budget"] is False
    (line,) = [x for x in study.goal_lines(trials) if x.startswith("| bk-code")]
    assert "| 4 of 6 | 3 (" in line and line.endswith("| yes; yes | met | met |")


def test_the_5m_study_is_decided_once_the_seeds_in_keep_it_below_whatever_comes():
    # The t interval's lower end with seeds still to come is searched over what they could
    # bring; a seed far below ppo keeps it under zero whatever they bring, a tie does not.
    trials: dict = {}
    _study(
        trials, study.BUDGET_STUDY, 5_000_000, [0.9], bk_code=[0.9], bk_pref=[0.0], bk_goal=[1.0]
    )
    tally = study.goal_tally(trials)
    assert tally["bk-pref"]["budget"] is False and tally["bk-pref"]["verdict"] == "not met"
    assert tally["bk-pref"]["budget_best_case"] < 0
    # a tie with ppo is decided too: larger later differences widen the interval more than
    # they lift its mean (0, +1, +1 reach down to 2/3 − 4.303 / 3), and the best it can do is
    # two more ties, an interval of one point at zero, which is not above it; a first
    # difference of +0.1 is not decided (two more of +0.1 would be a point above zero)
    assert tally["bk-code"]["budget"] is False
    assert tally["bk-code"]["budget_best_case"] == pytest.approx(0.0)
    assert tally["bk-goal"]["budget"] is None and tally["bk-goal"]["verdict"] == "open"
    (line,) = [x for x in study.goal_lines(trials) if x.startswith("| bk-pref")]
    best = tally["bk-pref"]["budget_best_case"]
    assert f"no, before all seeds are in (lower end at best {study_signed(best)})" in line
    # ppo's seed not in yet: nothing is decided by the method's seed alone.
    trials = {}
    _study(trials, study.BUDGET_STUDY, 5_000_000, [], bk_pref=[0.1])
    assert study.goal_tally(trials)["bk-pref"]["budget"] is None


def study_signed(x: float) -> str:
    from bench.learning_measures import signed

    return signed(x)


def test_the_pooled_reading_takes_only_complete_transfer_tasks():
    trials: dict = {}
    _study(trials, "purpleball-s23", 500_000, [0.2] * 3, bk_code=[0.3, 0.3, 0.1])
    _study(trials, "redkey-s23", 500_000, [0.2] * 3, bk_code=[0.4, 0.4, 0.4])
    _study(trials, "purplekey-s25", 500_000, [0.2] * 2, bk_code=[0.9] * 2)  # seed 2 not in
    _study(trials, study.BUDGET_STUDY, 5_000_000, [0.2] * 3, bk_code=[0.9] * 3)  # not transfer
    lines = study.pooled_lines(trials)
    (row,) = [x for x in lines if x.startswith("| bk-code | greedy area")]
    # (0.1 + 0.1 − 0.1) / 3 on purpleball-s23 and 0.2 on redkey-s23: their mean, 0.117
    assert row.startswith("| bk-code | greedy area | 2 | 2 | 5 of 6 | +0.117 | [")
    # tasks as the unit: the t interval of the two task means 1/30 and 0.2 at 1 degree of
    # freedom, 7/60 ± 12.706 / 12
    assert row.endswith("| [−0.942, +1.176] |")
    assert not [x for x in lines if x.startswith("| bk-pref")]  # no bk-pref trial at all
    # a seed tied with ppo (both at the floor) is not counted as above it
    _study(trials, "purpleball-s28", 500_000, [0.0] * 3, bk_goal=[0.0, 0.1, 0.1])
    (row,) = [x for x in study.pooled_lines(trials) if x.startswith("| bk-goal | greedy area")]
    assert row.startswith("| bk-goal | greedy area | 1 | 1 | 2 of 3 | +0.067 | [")
    assert study.pooled_lines({}) == []


def test_a_stored_curve_from_a_resumed_trial_is_cut_back_once_and_marked():
    from rl_bk import metrics as M

    # stopped after 80k, resumed from the checkpoint at 40k: the next report is ~61k again
    steps = [20_000, 40_000, 60_000, 80_000, 61_000, 81_000, 101_000]
    greedy = [0.1, 0.2, 0.9, 0.9, 0.3, 0.4, 0.5]
    trials = {
        study.trial_id("redkey-s23", "ppo", 1): {
            "run_dir": "bench/runs/not-on-this-machine",
            "progress": {M.ENV_STEPS: steps, M.EVAL_SUCCESS_RATE: greedy},
        }
    }
    (line,) = study.drop_superseded_reports(trials)
    assert line == "redkey-s23/ppo/1: stored curve cut back by env steps: run folder not here"
    kept = trials[study.trial_id("redkey-s23", "ppo", 1)]["progress"]
    assert kept[M.ENV_STEPS] == [20_000, 40_000, 61_000, 81_000, 101_000]
    assert kept[M.EVAL_SUCCESS_RATE] == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert study.drop_superseded_reports(trials) == []  # mended once
    text, _ = study.resumed_lines("redkey-s23", trials)
    assert "ppo seed 1 (stored curve cut back" in text
    # a trial read from its run folder says where it went on from
    trials[study.trial_id("redkey-s23", "bk-goal", 0)] = {"restored_from": [38_912.0, 265_000.0]}
    trials[study.trial_id("redkey-s23", "bk-code", 0)] = {"restored_from": []}
    text, _ = study.resumed_lines("redkey-s23", trials)
    assert "; bk-goal seed 0 (from 38,912, 265,000 env steps)." in text
    assert "bk-code" not in text


def test_a_resumed_trial_whose_run_folder_is_here_is_read_again_from_it(monkeypatch, tmp_path):
    from rl_bk import metrics as M

    read = []
    fresh = {M.ENV_STEPS: [20_000, 40_000, 61_000], M.EVAL_SUCCESS_RATE: [0.1, 0.2, 0.3]}

    def finished_trials(run_dir, steps):
        read.append((run_dir, steps))
        return {"bk-goal": {"progress": fresh, "restored_from": [40_000.0]}}

    monkeypatch.setattr(study, "finished_trials", finished_trials)
    key = study.trial_id("purplekey-s25", "bk-goal", 2)
    trials = {
        key: {
            "run_dir": str(tmp_path),
            "progress": {
                M.ENV_STEPS: [20_000, 40_000, 60_000, 41_000],
                M.EVAL_SUCCESS_RATE: [0.1] * 4,
            },
        }
    }
    assert study.drop_superseded_reports(trials) == [f"{key}: curve read again from its run folder"]
    assert read == [(tmp_path, 500_000)]  # checked against the study's own env steps
    assert trials[key]["progress"] == fresh and trials[key]["restored_from"] == [40_000.0]


def test_where_each_trial_went_on_from_is_read_once_per_run_folder(monkeypatch, tmp_path):
    read = []

    def finished_trials(run_dir, steps):
        read.append((run_dir, steps))
        return {"ppo": {"restored_from": []}, "bk-code": {"restored_from": [40_960.0]}}

    monkeypatch.setattr(study, "finished_trials", finished_trials)
    pair = {"run_dir": str(tmp_path)}
    trials = {
        study.trial_id("redkey-s28", "ppo", 0): dict(pair),
        study.trial_id("redkey-s28", "bk-code", 0): dict(pair),
        study.trial_id("redkey-s28", "bk-pref", 0): {**pair, "restored_from": []},
        study.trial_id("redkey-s28", "bk-goal", 0): {"run_dir": str(tmp_path / "gone")},
    }
    assert study.note_restores(trials) == ["redkey-s28/bk-code/0"]
    assert read == [(tmp_path, 500_000)]  # the pair's folder read once, for both trials
    assert trials["redkey-s28/bk-code/0"]["restored_from"] == [40_960.0]
    assert trials["redkey-s28/ppo/0"]["restored_from"] == []
    assert "restored_from" not in trials["redkey-s28/bk-goal/0"]  # its folder is not here


def test_what_the_goal_can_detect_uses_the_spread_of_complete_transfer_tasks_only():
    trials: dict = {}
    # bk-code minus ppo: 0.1, 0.2, 0.3 (deviations −0.1, 0, +0.1); bk-pref: 0, 0, 0
    _study(trials, "purpleball-s23", 500_000, [0.2] * 3, bk_code=[0.3, 0.4, 0.5], bk_pref=[0.2] * 3)
    _study(trials, "redkey-s23", 500_000, [0.2] * 2, bk_code=[0.9, 0.1])  # seed 2 not in
    _study(trials, study.BUDGET_STUDY, 5_000_000, [0.2] * 3, bk_code=[0.9, 0.1, 0.5])
    text = " ".join(study.detection_lines(trials))
    # squares 0.02 over 2 + 2 degrees of freedom: sqrt(0.005) = 0.0707
    assert "differences, 0.071 (4 degrees of freedom, 2 method-task groups" in text
    assert "ppo's greedy area on those tasks: 0.200 on average (3 runs)" in text
    # the t interval passes 2.5% of tasks with no effect; every seed above, 1/8 (3 of 6: 0.03)
    assert "| 0 (no effect) | 0.03 | 0.00 | 0.12 | 0.03 |" in text
    # every seed above: Φ(0.1 / 0.0707)³ = 0.921³ = 0.782 a task; 3 of 6 at 0.782: 0.977
    (row,) = [x for x in study.detection_lines(trials) if x.startswith("| +0.100 |")]
    assert row.endswith("| 0.78 | 0.98 |")
    assert study.detection_lines({}) == []


def _trial(label: str, greedy: list[float], sampled: list[float], training: list[float]) -> dict:
    """Evaluated every 20k env steps up to 100k."""
    from rl_bk import metrics as M

    return {
        "label": label,
        "progress": {
            M.ENV_STEPS: [20_000, 40_000, 60_000, 80_000, 100_000],
            M.EVAL_SUCCESS_RATE: greedy,
            M.EVAL_SAMPLED_SUCCESS_RATE: sampled,
            M.SUCCESS_RATE: training,
        },
    }


def test_a_study_table_reads_each_measure_at_its_budgets_and_pairs_bk_with_ppo_by_seed():
    ppo, code = "ppo extrinsic_coeff=10.0", "bk-code backend=oracle"
    trials = {
        study.trial_id("redkey-s28", "ppo", 0): _trial(
            ppo, [0.0, 0.2, 0.4, 0.6, 0.8], [0.5] * 5, [0.6] * 5
        ),
        study.trial_id("redkey-s28", "ppo", 1): _trial(ppo, [0.2] * 5, [0.5] * 5, [0.6] * 5),
        study.trial_id("redkey-s28", "bk-code", 0): _trial(
            code, [0.2, 0.4, 0.9, 0.9, 1.0], [0.7] * 5, [0.6] * 5
        ),
        study.trial_id("redkey-s28", "bk-code", 1): _trial(
            code, [0.2, 0.2, 0.2, 0.2, 0.3], [0.5] * 5, [0.4] * 5
        ),
    }
    lines = study.study_lines("redkey-s28", 100_000, [60_000, 100_000], trials)
    assert lines[0] == "### redkey-s28 (100,000 env steps)"
    assert lines[2] == (
        "| variant | seeds | greedy area | sampled area | training area | "
        "greedy @60k | greedy @100k | greedy steps to 0.9 |"
    )
    # greedy areas: ppo 2.0/5 = 0.40 and 1.0/5 = 0.20; bk-code 3.4/5 = 0.68 and 1.1/5 = 0.22
    assert lines[4] == (
        "| ppo extrinsic_coeff=10.0 | 2 | 0.30 ± 0.14 | 0.50 ± 0.00 | "
        "0.60 ± 0.00 | 0.30 ± 0.14 | 0.50 ± 0.42 | never, never |"
    )
    assert lines[5] == (
        "| bk-code backend=oracle | 2 | 0.45 ± 0.33 | 0.60 ± 0.14 | "
        "0.50 ± 0.14 | 0.55 ± 0.49 | 0.65 ± 0.49 | 60k, never |"
    )
    paired = {line.split(" | ")[1]: line for line in lines if line.startswith("| bk-code |")}
    # seed by seed: 0.68 − 0.40 and 0.22 − 0.20; the t interval at 1 degree of freedom is
    # mean ± 12.706 × half their distance
    assert paired["greedy area"].endswith("| +0.280, +0.020 | +0.150 | [−1.502, +1.802] |")
    assert paired["sampled area"].endswith("| +0.200, +0.000 | +0.100 | [−1.171, +1.371] |")
    assert paired["training area"].endswith("| +0.000, −0.200 | −0.100 | [−1.371, +1.171] |")
    # no paired table without ppo or without a bk-*; a study with no trial is not run yet
    for method in ("ppo", "bk-code"):
        alone = {k: v for k, v in trials.items() if f"/{method}/" in k}
        assert not [
            x
            for x in study.study_lines("redkey-s28", 100_000, [100_000], alone)
            if x.startswith("Paired")
        ]
    assert study.study_lines("purplekey-s30", 500_000, [500_000], trials)[2] == "Not run yet."


def _fake_row(method: str, seed: int) -> dict:
    return {
        "run": "somewhere",
        "checkpoint": "checkpoint_000199",
        "env_steps": 5_000_000,
        "variant": {"method": method, "params": {}},
        "seed": seed,
        "episodes": 200,
        "target_in_view_at_reset": 24,
        "greedy_success": 0.8,
        "sampled_success": 0.97,
        "greedy_failed": 40,
        "greedy_failed_looped": 40,
        "greedy_failed_never_saw_target": 30,
        "sampled_failed": 6,
        "sampled_failed_never_saw_target": 5,
    }


def test_a_pairs_trials_are_checked_for_greedy_loops_and_a_failed_check_does_not_stop_the_study(
    tmp_path, monkeypatch, capsys
):
    from bench import greedy_loops

    run_dir = tmp_path / "0-bk-pref+bk-goal"
    for name, method in (("t_00000", "bk-pref"), ("t_00001", "bk-goal")):
        (run_dir / "tune" / name / "checkpoint_000199").mkdir(parents=True)
        (run_dir / "tune" / name / "params.json").write_text(json.dumps({"method": method}))
    (run_dir / "tune" / "t_00002").mkdir()  # a trial folder without checkpoints is skipped
    checked = []

    def fake_check_run(folder, episodes):
        checked.append((folder.name, episodes))
        method = json.loads((folder / "params.json").read_text())["method"]
        return _fake_row(method, 0)

    monkeypatch.setattr(greedy_loops, "check_run", fake_check_run)
    stem = tmp_path / "loops"
    study.record_greedy_failures([("redball-s20-5m", run_dir)], stem)
    assert checked == [("t_00000", study.DIAGNOSIS_EPISODES), ("t_00001", study.DIAGNOSIS_EPISODES)]
    rows = json.loads(stem.with_suffix(".json").read_text())
    assert set(rows) == {"redball-s20-5m/bk-pref/0", "redball-s20-5m/bk-goal/0"}
    table = stem.with_suffix(".md").read_text()
    assert (
        "| bk-pref seed=0 | checkpoint_000199 (5,000,000) | 24 of 200 | 0.80 | 0.97 | 40 |" in table
    )

    def broken_check_run(folder, episodes):
        raise RuntimeError("no such module")

    monkeypatch.setattr(greedy_loops, "check_run", broken_check_run)
    written = stem.with_suffix(".md").stat().st_mtime_ns
    (tmp_path / "1-ppo+bk-code" / "tune" / "t_00000" / "checkpoint_000199").mkdir(parents=True)
    study.record_greedy_failures([("redball-s20-5m", tmp_path / "1-ppo+bk-code")], stem)
    said = capsys.readouterr().out
    assert "WARNING: the greedy-failure check" in said and "RuntimeError: no such module" in said
    assert set(json.loads(stem.with_suffix(".json").read_text())) == set(rows)  # kept
    assert stem.with_suffix(".md").stat().st_mtime_ns == written  # nothing new: not rewritten


def test_only_finished_trials_of_diagnosed_studies_still_here_and_unchecked_are_checked(tmp_path):
    here, gone = tmp_path / "here", tmp_path / "gone"
    here.mkdir()
    trials = {
        "redball-s20-5m/ppo/1": {"run_dir": str(here)},
        "redball-s20-5m/bk-code/1": {"run_dir": str(here)},
        "redball-s20-5m/ppo/0": {"run_dir": str(gone)},  # an earlier machine's
        "redball-s20-5m/bk-pref/0": {"run_dir": str(here)},  # already checked
        "redkey-s28/ppo/0": {"run_dir": str(here)},
    }  # not a diagnosed study
    stem = tmp_path / "loops"
    stem.with_suffix(".json").write_text(json.dumps({"redball-s20-5m/bk-pref/0": {}}))
    assert study.undiagnosed_runs(trials, stem) == [("redball-s20-5m", here)]
    trials.pop("redball-s20-5m/ppo/1"), trials.pop("redball-s20-5m/bk-code/1")
    assert study.undiagnosed_runs(trials, stem) == []
