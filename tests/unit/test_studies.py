"""A study is a plan file run by one driver. A part may narrow its task (methods, one
method's sweep grid, its budget): the reward-free Crafter study runs ELLM's oracle row at 300k
and the slow embedded-LLM row as a part of its own, so neither waits on the other inside one
Tune sweep."""

import pytest

from studies import report, trials
from studies.plan import PlanError, StudyPlan, load_plan, plan_names


def tasks(study: str, smoke: bool = False):
    return trials.plan_tasks(load_plan(study), smoke)


def test_part_changes_narrow_the_task_and_keep_the_rest():
    parts = tasks("crafter-ellm-reward-free")
    oracle = parts["crafter"]
    assert oracle.methods == ["ellm", "ellm-novelty", "rnd"]
    assert oracle.sweep["ellm"] == {"backend": ["oracle"]}
    assert oracle.sweep["rnd"] == {"ext_coeff": [0.0]}  # the task's other grids are kept
    assert oracle.stop.num_env_steps == 300_000  # the study's budget

    embedded = parts["crafter-embedded-llm"]
    assert embedded.methods == ["ellm"]
    assert embedded.sweep["ellm"] == {"backend": ["llamacpp"]}
    assert embedded.stop.num_env_steps == 30_000  # the part's budget wins over the study's
    assert embedded.budgets == [10_000, 20_000, 30_000]


def test_part_without_changes_is_the_task_at_the_study_budget():
    plan = load_plan("nethack-oni")
    assert plan.parts[0].changes == plan.parts[0].changes.__class__()
    task = tasks("nethack-oni")[plan.parts[0].name]
    assert task.stop.num_env_steps == 300_000
    assert "oni-classification" in task.methods


def test_plan_wide_changes_reach_every_part_and_a_parts_own_win():
    qwen = tasks("qwen-bk")
    assert set(qwen) == {"redball-s20", "purplekey-s25"}
    for task in qwen.values():
        assert task.seeds == [100, 101, 102, 103, 104]
        assert task.sweep["bk-pref"] == {
            "include_mission": [False],
            "backend": ["llamacpp", "oracle"],
        }
        assert task.env_runners.num_envs_per_env_runner == 8 and task.learner.threads == 1
        assert task.stop.num_env_steps == 500_000


def test_a_plan_sets_how_often_a_trial_keeps_a_checkpoint():
    # qwen-ellm's Qwen trials label for longer than a session: without a checkpoint every
    # iteration they would restart from nothing each time (the task file keeps one per 25)
    assert tasks("qwen-ellm")["crafter"].checkpoint_every == 1
    assert tasks("qwen-bk")["redball-s20"].checkpoint_every == 25  # the file's, untouched


def test_smoke_keeps_the_smoke_budget():
    smoke = tasks("crafter-ellm-reward-free", smoke=True)["crafter-embedded-llm"]
    assert smoke.stop.num_env_steps < 30_000


def test_every_plan_loads_and_a_bad_plan_says_what_is_wrong(tmp_path):
    assert len(plan_names()) >= 9
    for name in plan_names():
        assert load_plan(name).parts
    (tmp_path / "bad.yaml").write_text("question: q\nparts: [{name: a, task: t}]\nsteeps: 3\n")
    with pytest.raises(PlanError, match="steeps"):
        load_plan("bad", tmp_path)
    with pytest.raises(PlanError, match="no study 'nope'"):
        load_plan("nope")
    with pytest.raises(ValueError, match="steps and budgets go together"):
        StudyPlan.model_validate(
            {
                "name": "x",
                "question": "q",
                "parts": [{"name": "a", "task": "t", "changes": {"steps": 3}}],
            }
        )


def test_achievement_table_means_over_seeds_most_unlocked_first():
    entries = [  # two seeds of two variants, as finished parts keep them
        {"achievements": {"ellm": {"collect_wood": 0.9, "place_table": 0.2}}},
        {"achievements": {"ellm": {"collect_wood": 1.0, "place_table": 0.4}}},
        {"achievements": {"rnd": {"collect_wood": 0.8, "place_table": 0.0}}},
        {"achievements": {"rnd": {"collect_wood": 0.6, "place_table": 0.0}}},
        {"rows": []},  # a part without rates (not Crafter) adds nothing
    ]
    lines = report.achievement_table(entries, ["ppo", "rnd", "ellm"])
    assert lines[2] == "| achievement | rnd | ellm |"  # the variants' order, ppo has none
    # collect wood: ellm (90 + 100) / 2 = 95, sd 7.07; rnd 70 ± 14.1; unlocked more often
    # than place table, so it comes first
    assert lines[4] == "| collect wood | 70 ± 14 | 95 ± 7.1 |"
    assert lines[5] == "| place table | 0 ± 0 | 30 ± 14 |"
    assert lines[-1].startswith("Not kept for: ppo (")
    assert report.achievement_table([{"rows": []}]) == []


def test_tech_tree_test_runs_oracle_and_novelty_on_seeds_the_first_study_did_not_use():
    (task,) = tasks("crafter-ellm-tech-tree").values()
    first = tasks("crafter-ellm-reward-free")["crafter"]
    assert task.methods == ["ellm", "ellm-novelty"]
    assert task.sweep["ellm"] == {"backend": ["oracle"]}
    assert task.seeds == [3, 4, 5] and not set(task.seeds) & set(first.seeds)
    assert task.stop.num_env_steps == 300_000
    plan = "\n".join(
        report.plan_lines(
            load_plan("crafter-ellm-tech-tree"), {"command": "c", "date": "d", "machine": "m"}
        )
    )
    assert "Primary measure: achievements_per_episode_without_wake_up" in plan


def test_rows_leaving_out_subtract_the_unlock_rates_at_the_end():
    entries = [
        {
            "rows": [{"variant": "ellm", "seed": 3, "achievements_per_episode": 5.0}],
            "achievements": {"ellm": {"wake_up": 0.9, "collect_wood": 1.0}},
        },
        {"rows": [{"variant": "ellm", "seed": 4, "achievements_per_episode": 4.0}]},  # no rates
    ]
    rows = report.rows_leaving_out(entries, ["wake_up"])
    column = "achievements_per_episode_without_wake_up"
    assert rows[0][column] == 4.1 and rows[0]["achievements_per_episode"] == 5.0
    assert rows[1][column] != rows[1][column]  # NaN: nothing to subtract from
    assert report.numbers_table(rows)[2] == "| ellm | 2 | 4.5 ± 0.71 | 4.1 ± 0 (1/2) |"


def test_appo_passes_runs_four_passes_on_seeds_appo_learning_did_not_use():
    learning, passes = tasks("appo-learning"), tasks("appo-passes")
    assert set(passes) == set(learning)  # both tasks of appo-learning
    for name, task in passes.items():
        assert not set(task.seeds) & set(learning[name].seeds)
        # 4 epochs over each batch, each batch taken once: PPO's passes per sample
        assert task.appo.num_epochs * task.appo.circular_buffer_iterations_per_batch == 4
        assert task.ppo.num_epochs == 4
        assert task.stop.num_env_steps == learning[name].stop.num_env_steps
        assert task.methods == learning[name].methods
        assert task.sweep[task.methods[0]] == learning[name].sweep[task.methods[0]]


def _curve(label: str, seed: int, values: list[float]) -> dict:
    from rl_bk import metrics as M

    steps = [1_000_000.0 * (i + 1) for i in range(len(values))]
    return {
        "label": label,
        "seed": seed,
        "progress": {M.ENV_STEPS: steps, M.GAME_SCORE_MEAN: values},
    }


def test_paired_table_pairs_every_method_with_a_named_baseline_by_seed():
    from rl_bk import metrics as M

    # areas (mean of the reports up to 3M): none 10, 20; x 13 (+3), 21 (+1); y 10 (+0), 18 (-2)
    curves = [
        _curve("none", 0, [9, 10, 11]),
        _curve("none", 1, [20, 20, 20]),
        _curve("x", 0, [12, 13, 14]),
        _curve("x", 1, [21, 21, 21]),
        _curve("y", 0, [10, 10, 10]),
        _curve("y", 1, [18, 18, 18]),
    ]
    rows = [
        line
        for line in report.paired_table(["none"], curves, [M.GAME_SCORE_MEAN], 3_000_000)
        if line.startswith("| x") or line.startswith("| y") or line.startswith("| none")
    ]
    assert len(rows) == 2  # the baseline is not paired with itself
    x, y = (row.split(" | ") for row in rows)
    assert x[0] == "| x − none" and x[3:6] == ["17", "15", "+2.000"]
    assert y[0] == "| y − none" and y[3:6] == ["14", "15", "−1.000"]
    # a method with fewer seeds: both areas over the seeds it shares with the baseline
    (z,) = (
        line
        for line in report.paired_table(
            ["none"], [*curves, _curve("z", 1, [22] * 3)], [M.GAME_SCORE_MEAN], 3_000_000
        )
        if line.startswith("| z")
    )
    assert z.split(" | ")[2:6] == ["1", "22", "20", "+2.000"]


def test_a_tag_pair_pairs_only_the_variants_with_the_tag():
    assert (
        report.baseline_of(("algorithm=appo", "algorithm=ppo"), "ppo algorithm=appo")
        == "ppo algorithm=ppo"
    )
    assert report.baseline_of(("algorithm=appo", "algorithm=ppo"), "ppo algorithm=ppo") is None


def test_several_pairings_find_baselines_as_the_tables_label_them():
    from rl_bk import metrics as M

    # the Qwen BK study's labels: ppo carries its sweep setting, the oracle's rows " (ORACLE)"
    ppo, qwen = "ppo extrinsic_coeff=10.0", "bk-pref backend=llamacpp include_mission=False"
    oracle = "bk-pref backend=oracle include_mission=False (ORACLE)"
    curves = [_curve(ppo, 0, [10] * 3), _curve(qwen, 0, [11] * 3), _curve(oracle, 0, [14] * 3)]
    rows = [
        line.split(" | ")[0]
        for line in report.paired_table(
            ["ppo", ("backend=llamacpp", "backend=oracle")], curves, [M.GAME_SCORE_MEAN], 3_000_000
        )
        if line.startswith("| bk")
    ]
    assert rows == [f"| {qwen} − {ppo}", f"| {oracle} − {ppo}", f"| {qwen} − {oracle}"]


def test_seed_major_order_runs_every_method_of_a_seed_before_the_next_seed():
    plan = [
        (f"{part}/{m}/{s}", m, None)
        for part in ("a", "b")
        for m in ("ppo", "x")
        for s in (100, 101)
    ]  # the plan's order: each method's seeds in turn
    ids = [p[0] for p in trials.run_order(plan, [], seed_major=True)]
    assert ids == [
        "a/ppo/100",
        "a/x/100",
        "a/ppo/101",
        "a/x/101",
        "b/ppo/100",
        "b/x/100",
        "b/ppo/101",
        "b/x/101",
    ]
    assert [p[0] for p in trials.run_order(plan, [], seed_major=False)] == [p[0] for p in plan]
    # methods named first still come first, each in seed order
    assert [p[0] for p in trials.run_order(plan, ["x"], seed_major=True)][:4] == [
        "a/x/100",
        "a/x/101",
        "b/x/100",
        "b/x/101",
    ]


def test_the_driver_runs_the_plans_trials_in_order_keeps_each_and_continues(tmp_path, monkeypatch):
    import json

    from studies import run

    ran = []

    def fake_run(task, methods, home):
        ran.append(home.relative_to(tmp_path / "runs").as_posix())
        return home

    def fake_finish(task, run_dir, plan):
        return {"rows": [], "curves": [], "commit": "test"}

    monkeypatch.setattr(run, "run_or_resume", fake_run)
    monkeypatch.setattr(run, "finished_trial", fake_finish)
    assert run.main(["qwen-bk", "--out", str(tmp_path), "--only", "ppo"]) == 0
    # seed-major, ppo only: each part's seeds in turn
    assert ran[:3] == [
        "qwen-bk/redball-s20/ppo/100",
        "qwen-bk/redball-s20/ppo/101",
        "qwen-bk/redball-s20/ppo/102",
    ]
    assert len(ran) == 10 and ran[5] == "qwen-bk/purplekey-s25/ppo/100"
    kept = json.loads((tmp_path / "results" / "qwen-bk.json").read_text())["finished"]
    assert sorted(kept) == sorted(p.removeprefix("qwen-bk/") for p in ran)
    report = (tmp_path / "results" / "qwen-bk.md").read_text()
    assert "Still to run: bk-code (seeds 100, 101, 102, 103, 104)" in report
    # Run again: the finished trials are kept, none runs twice.
    ran.clear()
    assert run.main(["qwen-bk", "--out", str(tmp_path), "--only", "ppo"]) == 0
    assert ran == []
