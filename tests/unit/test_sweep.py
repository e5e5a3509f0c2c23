"""Sweep expansion: methods × their grids; unknown methods fail before anything runs."""

import pytest

from rl_bk.experiments.sweep import Variant, expand_variants, trial_label
from rl_bk.experiments.task_config import load_task
from rl_bk.methods.registry import UnknownMethodError


def test_grid_is_the_cartesian_product_per_method():
    task = load_task("babyai-gotolocal-redball-s20").model_copy(
        update={"sweep": {"ppo": {"lr": [1e-4, 3e-4], "entropy_coeff": [0.0, 0.01]}}}
    )
    variants = expand_variants(task, ["ppo"])
    assert len(variants) == 4
    assert Variant("ppo", (("entropy_coeff", 0.0), ("lr", 1e-4))) in variants
    assert trial_label({"variant": variants[0].as_config(), "seed": 0}) == (
        "ppo entropy_coeff=0.0 lr=0.0001"
    )


def test_method_without_grid_is_one_variant_and_unknown_method_fails():
    task = load_task("crafter-text")
    assert "ppo" not in task.sweep
    assert expand_variants(task, ["ppo"]) == [Variant("ppo")]
    from rl_bk.methods.registry import METHODS

    # the message lists every registered method, sorted (whatever methods there are)
    with pytest.raises(UnknownMethodError) as err:
        expand_variants(task, ["nope"])
    assert str(err.value).endswith("valid methods: " + ", ".join(sorted(METHODS)))


def test_bk_variants_always_name_their_labeler():
    # Results must say whose knowledge a bk-* trial used: the oracle or which LLM.
    # BK's task-agnostic knowledge and the goal-aware variant run side by side.
    task = load_task("babyai-gotolocal-redball-s20")
    assert expand_variants(task, ["bk-code"]) == [
        Variant("bk-code", (("backend", "oracle"), ("include_mission", aware)))
        for aware in (False, True)
    ]
    assert (
        expand_variants(task, ["bk-code"])[0].label
        == "bk-code backend=oracle include_mission=False"
    )


def test_precollect_reaches_rnd_trials_only_and_stays_out_of_the_label():
    from rl_bk.experiments.sweep import build_algorithm_config, param_space, trial_label

    task = load_task("babyai-gotolocal-redball-s20")
    space = param_space(expand_variants(task, ["ppo", "rnd"]), [0], "/data/bk")
    assert space["precollect_dir"] == "/data/bk"
    rnd = {"variant": {"method": "rnd", "params": {}}, "seed": 0, "precollect_dir": "/data/bk"}
    ppo = {"variant": {"method": "ppo", "params": {}}, "seed": 0, "precollect_dir": "/data/bk"}
    assert build_algorithm_config(task, rnd).precollect_dir == "/data/bk"
    assert not hasattr(build_algorithm_config(task, ppo), "precollect_dir")
    assert trial_label(rnd) == "rnd"


def test_each_declared_method_names_real_knowledge_and_settings():
    from rl_bk.experiments.task_config import TaskConfig
    from rl_bk.methods.registry import KNOWLEDGE, KNOWLEDGE_METHODS, METHODS

    for m in METHODS.values():
        assert m.knowledge is None or m.knowledge.kind in KNOWLEDGE, m.name
        assert m.settings is None or m.settings in TaskConfig.model_fields, m.name
    # A method whose knowledge a labeler made also has knowledge to build.
    assert all(METHODS[name].knowledge for name in KNOWLEDGE_METHODS)


def test_swept_values_pass_the_checks_a_task_file_value_would():
    from rl_bk.experiments.task_config import TaskConfigError

    task = load_task("nethack-score")
    ok = task.model_copy(update={"sweep": {"oni-retrieval": {"llm_coeff": [0.0, 0.4]}}})
    assert len(expand_variants(ok, ["oni-retrieval"])) == 2
    # ONI's settings model refuses a negative coefficient in the file: the sweep does too
    bad = task.model_copy(update={"sweep": {"oni-retrieval": {"llm_coeff": [0.4, -1.0]}}})
    with pytest.raises(TaskConfigError, match=r"sweep\.oni-retrieval\.llm_coeff: -1\.0"):
        expand_variants(bad, ["oni-retrieval"])
    # and PPO's own parameters are checked by ppo:'s model
    ppo = task.model_copy(update={"sweep": {"oni-none": {"minibatch_size": [0]}}})
    with pytest.raises(TaskConfigError, match=r"sweep\.oni-none\.minibatch_size"):
        expand_variants(ppo, ["oni-none"])


def test_a_swept_section_field_changes_that_trials_task_and_nothing_else():
    from rl_bk.experiments.sweep import build_algorithm_config
    from rl_bk.experiments.task_config import TaskConfigError, with_swept_sections

    key = "env_runners.max_requests_in_flight_per_env_runner"
    task = load_task("nethack-score-appo")
    swept = task.model_copy(update={"sweep": {"oni-none": {key: [1, 2]}}})
    variants = expand_variants(swept, ["oni-none"])
    assert [v.label for v in variants] == [f"oni-none {key}=1", f"oni-none {key}=2"]
    two, rest = with_swept_sections(task, {key: 2, "lr": 3e-4})
    assert two.env_runners.max_requests_in_flight_per_env_runner == 2
    assert two.env_runners.num_envs_per_env_runner == task.env_runners.num_envs_per_env_runner
    assert task.env_runners.max_requests_in_flight_per_env_runner == 1  # the file's, untouched
    assert rest == {"lr": 3e-4}  # the method's own parameters go to training(...)
    config = build_algorithm_config(task, {"variant": variants[1].as_config(), "seed": 0})
    assert config.max_requests_in_flight_per_env_runner == 2
    # checked before anything runs, as the file's own value would be
    bad = task.model_copy(update={"sweep": {"oni-none": {key: [0]}}})
    with pytest.raises(TaskConfigError, match=r"sweep\.oni-none: sweep key env_runners\.max_req"):
        expand_variants(bad, ["oni-none"])
    with pytest.raises(TaskConfigError, match="env_runners has no field 'envs'"):
        with_swept_sections(task, {"env_runners.envs": 4})
    with pytest.raises(TaskConfigError, match="'runners' is not a section"):
        with_swept_sections(task, {"runners.num_env_runners": 4})
